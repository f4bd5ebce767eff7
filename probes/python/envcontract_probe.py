"""envcontract's probe program: runs one stage inside an env and reports.

Shipped inside the agent and written to a private directory for each run;
never fetched. It speaks JSON Lines (schema 1) into the result file named on
its command line, one record per finished step, flushed as it goes, so a
crash or a hang in a later step never loses an earlier one, and nothing the
env's code prints (on stdout or stderr) can corrupt the report.

    python envcontract_probe.py REQUEST_JSON RESULT_FILE STACK_DUMP_FILE [PROGRESS_FILE]

A request {"chain": [REQUEST, ...], "first_import": MODULE} runs several
stages whose first step is the same import: this interpreter imports MODULE
once, as each stage would first, then runs each stage in a process forked
from it (the last one in itself), so each starts from the state a fresh
interpreter would reach by that import, and a crash or side effect of one
stage never reaches the next. Each is reported between its own start and end
records; the name of each is appended to PROGRESS_FILE as it starts, so that
the agent holds each to its own time-out. When a fork would not be such a
copy (the import started threads or opened a device), the line "stop REASON"
is appended instead and the interpreter ends: the agent runs the rest in
interpreters of their own.

Stages (request "stage"):
  identity  import torch (backend autoload off); torch's own view of itself
  imports   import modules in order; per module: success or the exact error,
            and what was printed on stderr (C-level output included)
  devices   evaluate a device-count expression after importing its modules
  smoke     run a snippet of Python; report its stdout
Compatible with Python 3.6 and later.
"""
import os
import signal
import stat
import sys
import time
import warnings

# The private directory the agent made for this run (the result file's):
# scratch files live there, so the probe needs no tempfile module (a tenth
# of its own start-up) and leaves nothing in the env user's /tmp.
SCRATCH_DIR = "."


def scratch_file(name):
    """A new, nameless file of the private directory, open for reading and
    writing: a process an earlier import left behind writes into its own
    file, never into a later capture."""
    try:
        fd = os.open(SCRATCH_DIR, os.O_TMPFILE | os.O_RDWR, 0o600)
    except (AttributeError, OSError):  # a filesystem without O_TMPFILE
        path = os.path.join(SCRATCH_DIR, "%s.%d.%d" % (name, os.getpid(), next(_SCRATCH_NUMBERS)))
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        os.unlink(path)
    return os.fdopen(fd, "w+b")


_SCRATCH_NUMBERS = iter(range(1 << 62))

SCHEMA_VERSION = 1

# JSON without the json module, which imports re and compiles its patterns:
# a fifth of this program's own start-up in an env whose modules do not
# import re themselves, and one module fewer that the env's imports find
# already loaded. Strings are quoted by json's own C half where there is one.
try:
    from _json import encode_basestring_ascii as _quoted
except ImportError:  # an interpreter built without it
    from json import dumps as _dumps

    def _quoted(text):
        return _dumps(text)


def json_text(value):
    """What json.dumps(value, default=repr) writes, for the values records
    hold: anything else is written as its repr, as a string."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(json_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(
            _quoted(_key_text(key)) + ": " + json_text(item) for key, item in value.items()) + "}"
    return _quoted(repr(value))


def _key_text(key):
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (int, float)):
        return json_text(key)  # json's own keys: "null", "true", "1", "0.5"
    return repr(key)  # json would refuse it: a record is not lost for a key


# The agent writes each request as JSON, which is also a Python expression
# once true, false and null are names: read with nothing else in reach.
REQUEST_NAMES = {"__builtins__": {}, "true": True, "false": False, "null": None}


class Report:
    def __init__(self, path):
        self._file = open(path, "a", encoding="utf-8")

    def write(self, record_type, **fields):
        fields["type"] = record_type
        self._file.write(json_text(fields) + "\n")
        self._file.flush()


class CapturedStderr:
    """Redirects file descriptor 2 into a temporary file, so C libraries'
    warnings (a loader's "undefined symbol") are captured with Python's."""

    def __enter__(self):
        sys.stderr.flush()
        self._saved = os.dup(2)
        self._file = scratch_file("stderr.capture")
        os.dup2(self._file.fileno(), 2)
        self.text = ""
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read(256 * 1024).decode("utf-8", "replace")
        self._file.close()
        return False


def error_fields(error):
    try:
        import traceback  # only on errors: most runs never need it

        trace = traceback.format_exc(limit=20)[-8000:]
    except BaseException:  # noqa: B902  env code may have broken importing itself
        trace = ""
    return {
        "error_type": type(error).__name__,
        "error": str(error),
        "traceback": trace,
    }


def module_location(name):
    """Where the interpreter found the top-level module of `name`: the agent
    compares it with where the env's files say it is."""
    module = sys.modules.get(name.split(".")[0])
    location = getattr(module, "__file__", None)
    if not isinstance(location, str):
        return {"file": None}
    return {"file": location, "realpath": os.path.realpath(location)}


# Each import's record in this interpreter, by module, for a chain's later
# stages (see stage_imports).
IMPORTED = {}


def import_module(report, name):
    result = make_import(name)
    report.write("import", module=name, **result)
    return result["ok"]


def make_import(name):
    """Imports `name`, capturing its warnings and stderr; returns its record."""
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught, CapturedStderr() as stderr:
        warnings.simplefilter("always")
        try:
            __import__(name)
            result = {"ok": True}
        except BaseException as error:  # noqa: B902  env code may raise anything
            result = {"ok": False}
            result.update(error_fields(error))
    if result["ok"]:
        result.update(module_location(name))
    result["warnings"] = ["%s: %s" % (w.category.__name__, w.message) for w in caught]
    result["stderr"] = stderr.text
    result["seconds"] = round(time.monotonic() - started, 4)
    IMPORTED.setdefault(name, result)
    return result


# The chain's first import (request "first_import"), made once for all its stages.
FIRST_IMPORT = None

# What a chain's first import printed on stdout: a smoke snippet that makes
# that import first, in a fresh interpreter, would have captured it as its own.
FIRST_IMPORT_STDOUT = b""


def make_first_import(name):
    """A chain's first import, made once for all its stages, its stdout kept
    for their snippets and passed on as a fresh interpreter's would be."""
    global FIRST_IMPORT_STDOUT
    sys.stdout.flush()
    saved = os.dup(1)
    output = scratch_file("stdout.capture")
    os.dup2(output.fileno(), 1)
    try:
        make_import(name)
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    output.seek(0)
    FIRST_IMPORT_STDOUT = output.read(256 * 1024)
    output.close()
    with os.fdopen(os.dup(1), "wb") as stdout:
        stdout.write(FIRST_IMPORT_STDOUT)


def import_first(report, name):
    """A stage's first import. Where this interpreter made it already, for the
    chain (its first_import), that import's record is this stage's: it is the
    one the stage would have made first in a fresh interpreter."""
    global REUSED_IMPORT_SECONDS
    if name in IMPORTED:
        report.write("import", module=name, **IMPORTED[name])
        REUSED_IMPORT_SECONDS = IMPORTED[name]["seconds"]
        return IMPORTED[name]["ok"]
    return import_module(report, name)


# The time of the import a stage took over from its chain (import_first): it
# counts in the stage's own time, as it would have in a fresh interpreter.
REUSED_IMPORT_SECONDS = 0.0


def stage_identity(report, request):
    if not import_first(report, "torch"):
        return
    import torch

    version = getattr(torch, "version", None)
    report.write(
        "torch",
        version=getattr(torch, "__version__", None),
        cuda=getattr(version, "cuda", None),
        hip=getattr(version, "hip", None),
        file=getattr(torch, "__file__", None),
    )


def stage_imports(report, request):
    modules = request.get("modules", [])
    for index, name in enumerate(modules):
        if index == 0:
            import_first(report, name)
        else:
            import_module(report, name)
    torch = sys.modules.get("torch")
    if torch is not None and request.get("report_torch_after", False):
        version = getattr(torch, "version", None)
        report.write("torch_after_imports", cuda=getattr(version, "cuda", None),
                     hip=getattr(version, "hip", None))


def stage_devices(report, request):
    for index, name in enumerate(request.get("imports", [])):
        if not (import_first(report, name) if index == 0 else import_module(report, name)):
            return
    namespace = {name.split(".")[0]: sys.modules[name.split(".")[0]]
                 for name in request.get("imports", [])}
    try:
        value = eval(request["expression"], namespace)  # the contract's own expression
        report.write("devices", expression=request["expression"], value=int(value))
    except BaseException as error:  # noqa: B902
        report.write("devices", expression=request["expression"], value=None,
                     **error_fields(error))


def stage_smoke(report, request):
    global REUSED_IMPORT_SECONDS
    started = time.monotonic()
    try:
        code = compile(request["code"], "<smoke>", "exec")
    except BaseException as error:  # noqa: B902  a snippet that does not compile runs nothing
        result = {"ok": False, "output": ""}
        result.update(error_fields(error))
        result["seconds"] = round(time.monotonic() - started, 4)
        report.write("smoke", **result)
        return
    printed = b""
    if FIRST_IMPORT is not None:
        # Its first statement imports the chain's first import (the agent
        # chains it only then), which this process has made: what that import
        # printed and took is the snippet's, as in a fresh interpreter.
        REUSED_IMPORT_SECONDS = IMPORTED[FIRST_IMPORT]["seconds"]
        started -= REUSED_IMPORT_SECONDS
        printed = FIRST_IMPORT_STDOUT
        sys.stderr.write(IMPORTED[FIRST_IMPORT]["stderr"])
        sys.stderr.flush()
    output = scratch_file("stdout.capture")
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(output.fileno(), 1)
    try:
        exec(code, {"__name__": "__smoke__"})
        result = {"ok": True}
    except BaseException as error:  # noqa: B902
        result = {"ok": False}
        result.update(error_fields(error))
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    output.seek(0)
    printed = (printed + output.read(256 * 1024))[:256 * 1024]
    result["output"] = printed.decode("utf-8", "replace")
    result["seconds"] = round(time.monotonic() - started, 4)
    report.write("smoke", **result)


def stage_interpreter(report, request):
    """The interpreter itself, when no check needs more: the start and
    search_path records every stage writes (its version, its sys.path) are
    the evidence that it starts and which Python it is."""


STAGES = {
    "interpreter": stage_interpreter,
    "identity": stage_identity,
    "imports": stage_imports,
    "devices": stage_devices,
    "smoke": stage_smoke,
}


def run_step(report, step):
    global REUSED_IMPORT_SECONDS
    REUSED_IMPORT_SECONDS = 0.0
    report.write("start", schema_version=SCHEMA_VERSION, stage=step["stage"],
                 pid=os.getpid(), python=sys.version.split()[0],
                 executable=sys.executable, prefix=sys.prefix)
    # The interpreter's own search path and version, the evidence when it and
    # the files disagree.
    report.write("search_path", entries=[entry for entry in sys.path[1:257]],
                 version="%d.%d.%d" % sys.version_info[:3])
    started = time.monotonic()
    STAGES[step["stage"]](report, step)
    seconds = time.monotonic() - started + REUSED_IMPORT_SECONDS
    report.write("end", seconds=round(seconds, 4))


def first_import_of(step):
    """The import a stage makes first, where the probe can tell (a smoke
    snippet's is the agent's to tell)."""
    if step["stage"] == "identity":
        return "torch"
    names = step.get("modules" if step["stage"] == "imports" else "imports") or [None]
    return names[0]


# Character devices a process may hold open without holding any device's
# state: memory devices (null, zero, random...), terminals and pseudo-terminals.
HARMLESS_DEVICE_MAJORS = {1, 4, 5} | set(range(136, 144))


def fork_refusal(first_import, step, forked):
    """Why running `step` here, after importing `first_import` (in a copy of
    this interpreter when `forked`), would not be what a fresh interpreter
    that imports it first would do, or None."""
    if step["stage"] != "smoke" and first_import_of(step) != first_import:
        return "the stage's first import is not %s" % first_import
    if step["stage"] in ("devices", "smoke") and not IMPORTED[first_import]["ok"]:
        # A snippet would import it again, which a fresh interpreter does not.
        return "import %s failed" % first_import
    if not forked:
        return None
    return shared_state(first_import)


def shared_state(first_import):
    """What a fork of this interpreter would lose (threads, timers) or share
    with it (devices, pipes, sockets), or None."""
    try:
        threads = len(os.listdir("/proc/self/task"))
        descriptors = os.listdir("/proc/self/fd")
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            mapped = maps.read()
    except OSError as error:  # no /proc (a sandbox without one): nothing can be told
        return "cannot tell what import %s left running or open: %s" % (first_import, error)
    if threads > 1:
        return "import %s started %d other thread%s, which a fork does not copy" % (
            first_import, threads - 1, "" if threads == 2 else "s")
    for timer in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):
        if signal.getitimer(timer) != (0.0, 0.0):
            return "import %s set a timer, which a fork does not copy" % first_import
    for fd in descriptors:
        try:
            mode = os.fstat(int(fd))
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:  # the listing's own descriptor, closed since
            continue
        if DESCRIPTORS_BEFORE_IMPORT.get(fd) == target:
            continue  # the agent's pipes, the probe's own files
        if stat.S_ISCHR(mode.st_mode) and os.major(mode.st_rdev) not in HARMLESS_DEVICE_MAJORS:
            return "import %s opened %s, whose state a fork would share" % (first_import, target)
        if stat.S_ISSOCK(mode.st_mode) or stat.S_ISFIFO(mode.st_mode):
            return "import %s holds %s open, which a fork would share" % (first_import, target)
    for line in mapped.splitlines():
        fields = line.split(None, 5)
        path = fields[5] if len(fields) > 5 else ""
        if path.startswith("/dev/") and path != "/dev/zero" and not path.startswith("/dev/shm/"):
            return "import %s mapped %s, whose state a fork would share" % (first_import, path)
    return None


# The descriptors open before the chain's first import, "/proc/self/fd/N" -> target.
DESCRIPTORS_BEFORE_IMPORT = {}


def open_descriptors():
    found = {}
    try:
        for fd in os.listdir("/proc/self/fd"):
            try:
                found[fd] = os.readlink("/proc/self/fd/" + fd)
            except OSError:
                continue
    except OSError:
        pass
    return found


def child_processes():
    """The processes this interpreter started or adopted, or None when /proc
    cannot tell."""
    try:
        with open("/proc/self/task/%d/children" % os.getpid()) as children:
            return set(children.read().split())
    except OSError:
        return None


def adopt_what_stages_leave(adopt=True):
    """Makes this interpreter the parent of what a forked stage leaves
    running (PR_SET_CHILD_SUBREAPER), so it can tell, or no longer; False
    when it cannot."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1 if adopt else 0, 0, 0, 0) == 0
    except Exception:  # noqa: B902  no ctypes, or no prctl
        return False


def all_signals():
    if hasattr(signal, "valid_signals"):
        return signal.valid_signals()
    return set(range(1, signal.NSIG)) - {32, 33}  # glibc's own real-time signals


def die_as(status):
    """Ends this interpreter as the forked stage's process ended, so the agent
    judges the stage as if it had run here."""
    if status is None:
        os._exit(1)
    if os.WIFSIGNALED(status):
        signal_number = os.WTERMSIG(status)
        try:
            import resource

            # The stage's process dumped its core, if it could: not a second one.
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ImportError, OSError, ValueError):
            pass
        try:
            signal.signal(signal_number, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL's cannot be set, nor need be
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal_number])
        os.kill(os.getpid(), signal_number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


# The signal mask the chain's first import left, which each stage starts
# with; this interpreter blocks every signal while its stages run, so that no
# handler of env code runs in it between them.
STAGE_SIGNAL_MASK = None


def run_forked(report, step, adopted):
    """Runs `step` in a child of this interpreter. Returns None when the child
    finished it and left nothing running, or why the chain stops there (the
    fork failed, or the stage left processes behind, `adopted` being those
    this interpreter had before); otherwise this interpreter ends as the
    child did."""
    done_read, done_write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    # Without a status kept for it, a child's end could not be told.
    ignored_children = signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN
    if ignored_children:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        pid = os.fork()
    except OSError as error:  # a process limit: nothing of the stage ran
        os.close(done_read)
        os.close(done_write)
        return "cannot fork: %s" % error
    if pid == 0:
        if ignored_children:
            signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, STAGE_SIGNAL_MASK)
        os.close(done_read)
        try:
            run_step(report, step)
            os.write(done_write, b"1")
            code = 0
        except BaseException:  # noqa: B902  the probe's own failure: say it, end as Python would
            import traceback

            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    os.close(done_write)
    # The agent's hang diagnosis samples the process that runs the stage.
    with open(os.path.join(SCRATCH_DIR, "forked"), "a") as forked:
        forked.write("%d\n" % pid)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # cannot happen: SIGCHLD is not ignored while it waits
        status = None
    if ignored_children:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    # A process the stage left behind may hold the pipe open: do not wait for it.
    os.set_blocking(done_read, False)
    try:
        finished = os.read(done_read, 1) == b"1"
    except BlockingIOError:
        finished = False
    os.close(done_read)
    if not finished:
        die_as(status)
    left = child_processes()
    if left is None or left - adopted:
        # A fresh interpreter's stage would have had them killed with it.
        return "a forked %s stage left %s running" % (step["stage"], (
            "processes" if left is None else "%d process%s" % (
                len(left - adopted), "" if len(left - adopted) == 1 else "es")))
    return None


def stop(progress, why):
    """Tells the agent why the chain ends here; the stages after it run in
    interpreters of their own."""
    if progress is not None:
        progress.write("stop %s\n" % why)
        progress.flush()


def main():
    global SCRATCH_DIR
    request_path, result_path, stack_path = sys.argv[1:4]
    SCRATCH_DIR = os.path.dirname(os.path.abspath(result_path))
    progress = open(sys.argv[4], "a", encoding="utf-8") if len(sys.argv) > 4 else None
    report = Report(result_path)
    # Python stacks of every thread on SIGUSR1, even while one spins in C
    # (a forked stage's process inherits the handler and the file).
    import faulthandler

    stack_file = open(stack_path, "w")
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    with open(request_path, encoding="utf-8") as source:
        request = eval(source.read(), dict(REQUEST_NAMES))  # the agent's own text
    global FIRST_IMPORT
    steps = request.get("chain", [request])
    first_import = FIRST_IMPORT = request.get("first_import")
    if first_import is not None:
        DESCRIPTORS_BEFORE_IMPORT.update(open_descriptors())
        make_first_import(first_import)
    global STAGE_SIGNAL_MASK
    adopted = set()
    if first_import is not None and len(steps) > 1:
        STAGE_SIGNAL_MASK = signal.pthread_sigmask(signal.SIG_BLOCK, all_signals())
        adopted = child_processes()
        if adopted is None or not adopt_what_stages_leave():
            stop(progress, "cannot tell what a stage would leave running")
            return
    for index, step in enumerate(steps):
        # The last stage runs in this interpreter itself: no later one needs
        # its state untouched.
        forked = first_import is not None and index + 1 < len(steps)
        why = fork_refusal(first_import, step, forked) if first_import is not None else None
        if why is not None:
            stop(progress, why)
            return
        if STAGE_SIGNAL_MASK is not None and not forked:
            # This one runs here, as in a fresh interpreter: what the forked
            # stages' ends left pending is not its own, nor is the adoption.
            while signal.sigtimedwait([signal.SIGCHLD], 0) is not None:
                pass
            adopt_what_stages_leave(False)
            signal.pthread_sigmask(signal.SIG_SETMASK, STAGE_SIGNAL_MASK)
        if progress is not None:
            progress.write(step["stage"] + "\n")
            progress.flush()
        if forked:
            why = run_forked(report, step, adopted)
            if why is not None:
                stop(progress, why)
                return
        else:
            run_step(report, step)


if __name__ == "__main__":
    main()
