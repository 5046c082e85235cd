#!/usr/bin/env python3
"""Whether a results page quotes a generator's output exactly:

    check_page.py PRINTED PAGE

Every table of PRINTED (a run of lines starting with '|') must stand in PAGE
whole: from its header line on, the page's table has the same lines, none
more and none fewer. Every other non-empty line of PRINTED must be a line of
PAGE. Exit 1 naming the first difference, else 0.
"""
import sys


def blocks(lines):
    """(table lines, other lines) of a document."""
    tables, other, run = [], [], []
    for line in lines + [""]:
        if line.startswith("|"):
            run.append(line)
            continue
        if run:
            tables.append(run)
            run = []
        if line.strip():
            other.append(line)
    return tables, other


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    printed = open(argv[0]).read().splitlines()
    page = open(argv[1]).read().splitlines()
    tables, other = blocks(printed)
    for table in tables:
        if table[0] not in page:
            print(f"{argv[1]}: no table with the header {table[0]!r}", file=sys.stderr)
            return 1
        start = page.index(table[0])
        end = start
        while end < len(page) and page[end].startswith("|"):
            end += 1
        quoted = page[start:end]
        if quoted != table:
            diff = next((i for i, (a, b) in enumerate(zip(table, quoted)) if a != b),
                        min(len(table), len(quoted)))
            want = table[diff] if diff < len(table) else "(no line)"
            have = quoted[diff] if diff < len(quoted) else "(no line)"
            print(f"{argv[1]}: table {table[0][:40]!r}..., line {diff + 1}: the page has "
                  f"{have!r}, the generator prints {want!r}", file=sys.stderr)
            return 1
    lines = set(page)
    for line in other:
        if line not in lines:
            print(f"{argv[1]}: missing the line {line!r}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
