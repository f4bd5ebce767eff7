#!/usr/bin/env python3
"""Drives a page in headless Chromium for the dashboard's tests: opens URL,
runs a JavaScript async function body in it (through the DevTools protocol,
with Debian's python3-websocket), and prints what it returns as JSON.

Usage: browser.py PROFILE_DIR URL SCRIPT_FILE [TIMEOUT_SECONDS]

The script is the body of an async function: it can click, type, wait for
the page and `return` anything JSON can hold. For what --dump-dom cannot do:
a person filling in a form and watching it work.
"""
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import websocket


def devtools_port(profile, chromium, deadline):
    """Chromium writes the port it chose into DevToolsActivePort."""
    path = os.path.join(profile, "DevToolsActivePort")
    while time.time() < deadline:
        if chromium.poll() is not None:
            sys.exit("browser.py: chromium exited with %d" % chromium.returncode)
        if os.path.exists(path):
            with open(path) as handle:
                first = handle.readline().strip()
            if first.isdigit():
                return int(first)
        time.sleep(0.05)
    sys.exit("browser.py: chromium did not open its DevTools port")


def evaluate(socket, request_id, expression, timeout):
    """Runtime.evaluate of EXPRESSION (awaited); DevTools' whole answer,
    waited for TIMEOUT seconds at most."""
    socket.settimeout(max(timeout, 1))
    try:
        socket.send(json.dumps({"id": request_id, "method": "Runtime.evaluate", "params": {
            "expression": expression, "awaitPromise": True, "returnByValue": True,
            "timeout": int(timeout * 1000)}}))
        while True:
            message = json.loads(socket.recv())
            if message.get("id") == request_id:
                return message
    except (websocket.WebSocketException, OSError) as error:
        sys.exit("browser.py: DevTools did not answer: %s" % error)


def wait_until_loaded(socket, url, deadline):
    """Until the tab shows URL's document, loaded: on a busy machine the
    navigation can take longer than any fixed pause, and a script run in
    the blank page before it is lost when the navigation commits."""
    # Chromium shows its own error page (chrome-error://) when the server
    # does not answer: that is not the page.
    check = ("location.href !== 'about:blank' && !location.href.startsWith('chrome-error:')"
             " && document.readyState === 'complete'")
    request_id = 1000
    while time.time() < deadline:
        request_id += 1
        message = evaluate(socket, request_id, check, min(10, max(deadline - time.time(), 1)))
        if message.get("result", {}).get("result", {}).get("value") is True:
            return
        time.sleep(0.1)
    sys.exit("browser.py: %s did not load in time" % url)


def main():
    profile, url, script_file = sys.argv[1:4]
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
    deadline = time.time() + timeout
    with open(script_file) as handle:
        body = handle.read()
    os.makedirs(profile, exist_ok=True)
    chromium = subprocess.Popen(
        ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--remote-debugging-port=0", "--remote-allow-origins=*",
         "--user-data-dir=" + profile, "--window-size=1400,2000", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port = devtools_port(profile, chromium, deadline)
        request = urllib.request.Request(
            # Quoted whole: a '#fragment' of the page's URL is part of it.
            "http://127.0.0.1:%d/json/new?%s" % (port, urllib.parse.quote(url, safe="")),
            method="PUT")
        with urllib.request.urlopen(request, timeout=10) as answer:
            target = json.load(answer)
        socket = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=timeout)
        wait_until_loaded(socket, url, deadline)
        # Let the page's own script start before ours runs.
        time.sleep(1.0)
        expression = "(async () => {\n" + body + "\n})()"
        message = evaluate(socket, 1, expression, max(deadline - time.time(), 1))
        if "error" in message:
            # The page went away under the script (a navigation that had
            # not committed yet): said, not printed as a null result.
            sys.exit("browser.py: the script could not run: %s" % json.dumps(message["error"]))
        result = message.get("result", {})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            sys.exit("browser.py: the script threw: %s" % json.dumps(
                details.get("exception", {}).get("description", details.get("text"))))
        print(json.dumps(result.get("result", {}).get("value")))
        socket.close()
    finally:
        chromium.terminate()
        try:
            chromium.wait(timeout=10)
        except subprocess.TimeoutExpired:
            chromium.kill()


if __name__ == "__main__":
    main()
