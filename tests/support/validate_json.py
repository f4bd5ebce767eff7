"""Validates JSON documents against a JSON Schema (draft 2020-12).

usage: validate_json.py SCHEMA [DOCUMENT...]   (no DOCUMENT: one from stdin)
Prints each violation with its JSON path and exits 1 when there is any.
Runs under Debian's python3 with python3-jsonschema.
"""
import json
import sys

import jsonschema


def main():
    with open(sys.argv[1], encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    documents = sys.argv[2:] or ["-"]
    failures = 0
    for name in documents:
        if name == "-":
            document = json.load(sys.stdin)
        else:
            with open(name, encoding="utf-8") as handle:
                document = json.load(handle)
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
            path = "/".join(str(part) for part in error.absolute_path)
            print(f"{name}: /{path}: {error.message}")
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
