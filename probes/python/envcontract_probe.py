"""envcontract's probe program: runs one stage inside an env and reports.

Shipped inside the agent and written to a private directory for each run;
never fetched. It speaks JSON Lines (schema 1) into the result file named on
its command line, one record per finished step, flushed as it goes, so a
crash or a hang in a later step never loses an earlier one, and nothing the
env's code prints (on stdout or stderr) can corrupt the report.

    python envcontract_probe.py REQUEST_JSON RESULT_FILE STACK_DUMP_FILE [PROGRESS_FILE]

A request {"chain": [REQUEST, ...]} runs several stages in this one
interpreter, in order, each reported between its own start and end records;
the name of each is appended to PROGRESS_FILE as it starts, so that the
agent holds each to its own time-out.

Stages (request "stage"):
  identity  import torch (backend autoload off); torch's own view of itself
  imports   import modules in order; per module: success or the exact error,
            and what was printed on stderr (C-level output included)
  devices   evaluate a device-count expression after importing its modules
  smoke     run a snippet of Python; report its stdout
Compatible with Python 3.6 and later.
"""
import json
import os
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


class Report:
    def __init__(self, path):
        self._file = open(path, "a", encoding="utf-8")

    def write(self, record_type, **fields):
        fields["type"] = record_type
        self._file.write(json.dumps(fields, default=repr) + "\n")
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
    report.write("import", module=name, **result)
    IMPORTED.setdefault(name, result)
    return result["ok"]


def stage_identity(report, request):
    if not import_module(report, "torch"):
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
        if index == 0 and name in IMPORTED:
            # A chain's earlier stage imported it first in this interpreter,
            # as this stage would have in a fresh one (the agent chains only
            # then): its record is this import's.
            report.write("import", module=name, **IMPORTED[name])
            continue
        import_module(report, name)
    torch = sys.modules.get("torch")
    if torch is not None and request.get("report_torch_after", False):
        version = getattr(torch, "version", None)
        report.write("torch_after_imports", cuda=getattr(version, "cuda", None),
                     hip=getattr(version, "hip", None))


def stage_devices(report, request):
    for name in request.get("imports", []):
        if not import_module(report, name):
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
    started = time.monotonic()
    output = scratch_file("stdout.capture")
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(output.fileno(), 1)
    try:
        exec(compile(request["code"], "<smoke>", "exec"), {"__name__": "__smoke__"})
        result = {"ok": True}
    except BaseException as error:  # noqa: B902
        result = {"ok": False}
        result.update(error_fields(error))
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    output.seek(0)
    result["output"] = output.read(256 * 1024).decode("utf-8", "replace")
    result["seconds"] = round(time.monotonic() - started, 4)
    report.write("smoke", **result)


STAGES = {
    "identity": stage_identity,
    "imports": stage_imports,
    "devices": stage_devices,
    "smoke": stage_smoke,
}


def main():
    global SCRATCH_DIR
    request_path, result_path, stack_path = sys.argv[1:4]
    SCRATCH_DIR = os.path.dirname(os.path.abspath(result_path))
    progress = open(sys.argv[4], "a", encoding="utf-8") if len(sys.argv) > 4 else None
    report = Report(result_path)
    # Python stacks of every thread on SIGUSR1, even while one spins in C.
    import faulthandler
    import signal

    stack_file = open(stack_path, "w")
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    with open(request_path, encoding="utf-8") as source:
        request = json.load(source)
    for step in request.get("chain", [request]):
        if progress is not None:
            progress.write(step["stage"] + "\n")
            progress.flush()
        report.write("start", schema_version=SCHEMA_VERSION, stage=step["stage"],
                     pid=os.getpid(), python=sys.version.split()[0],
                     executable=sys.executable, prefix=sys.prefix)
        # The interpreter's own search path, the evidence when it and the files disagree.
        report.write("search_path", entries=[entry for entry in sys.path[1:257]])
        started = time.monotonic()
        STAGES[step["stage"]](report, step)
        report.write("end", seconds=round(time.monotonic() - started, 4))


if __name__ == "__main__":
    main()
