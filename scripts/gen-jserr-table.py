#!/usr/bin/env python3
"""Writes src/js/jserr_table.h from nats-server's server/errors.json.

Usage: scripts/gen-jserr-table.py ERRORS_JSON SOURCE_LABEL > src/js/jserr_table.h
SOURCE_LABEL names where the JSON came from (e.g. "nats-server v2.14.0-585-g1787eee03"); it
goes into the header comment so a later refresh can say what changed.

Names: the "JS" prefix is dropped, a trailing "ErrF" or "F" becomes _F, a trailing "Err" is
dropped, and the rest goes from CamelCase to UPPER_SNAKE with runs of capitals (ID, JSON, WQ,
TTL) kept as one word. Rows are sorted by err_code.
"""
import json
import re
import sys

# Spellings the mechanical split would make ugly.
FIXUPS = {"UnSupport": "Unsupport"}


def enum_name(constant):
    if not constant.startswith("JS"):
        raise SystemExit(f"unexpected constant {constant}")
    s = constant[2:]
    for bad, good in FIXUPS.items():
        s = s.replace(bad, good)
    suffix = ""
    if s.endswith("ErrF"):
        s, suffix = s[:-4], "_F"
    elif s.endswith("F"):
        s, suffix = s[:-1], "_F"
    elif s.endswith("Err"):
        s = s[:-3]
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", s)
    s = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", "_", s)
    return s.upper() + suffix


def c_string(text):
    if not text.isascii() or any(ord(c) < 0x20 for c in text):
        raise SystemExit(f"description needs care: {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    path, label = sys.argv[1], sys.argv[2]
    with open(path) as f:
        entries = json.load(f)
    rows = sorted((e["error_code"], enum_name(e["constant"]), e) for e in entries)
    names = [r[1] for r in rows]
    codes = [r[0] for r in rows]
    if len(set(names)) != len(names) or len(set(codes)) != len(codes):
        raise SystemExit("duplicate name or err_code")
    out = sys.stdout
    out.write(f"""/* The JetStream API error table: one row per entry of nats-server's server/errors.json
 * ({label}, {len(rows)} entries), sorted by err_code.
 *
 * X(NAME, code, err_code, "description"): NAME is nats-server's constant with the JS prefix
 * and the Err suffix dropped, a trailing F (or ErrF) kept as _F, in UPPER_SNAKE; code is the
 * HTTP-like status; err_code is the number clients match on; the description may hold
 * {{placeholders}} that nd_jserr_set fills in. Written by scripts/gen-jserr-table.py; to
 * refresh, run it on a newer errors.json and review the diff (rows are only ever added
 * upstream, never renumbered).
 */
#ifndef ND_JS_JSERR_TABLE_H
#define ND_JS_JSERR_TABLE_H

/* clang-format off */
#define ND_JSE_TABLE(X) \\
""")
    for code, name, e in rows:
        out.write(f"    X({name}, {e['code']}, {code}, {c_string(e['description'])}) \\\n")
    out.write("""    /* end of ND_JSE_TABLE */
/* clang-format on */

#endif
""")


if __name__ == "__main__":
    main()
