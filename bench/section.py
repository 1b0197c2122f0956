"""BENCHMARKS.md is written a section at a time, each by the benchmark that measured it (bench/run.py
the main tables, bench/fuzz.sh, bench/cli.sh, bench/web.sh, bench/fanout.sh their own): a writer replaces
the sections it brings and leaves the others, each from its own run, where they are."""
import os


def split(lines):
    """The lines before the first `## ` heading, and each section as (heading, its lines)."""
    preamble, sections = [], []
    for line in lines:
        if line.startswith("## "):
            sections.append((line, [line]))
        elif sections:
            sections[-1][1].append(line)
        else:
            preamble.append(line)
    return preamble, sections


def trimmed(lines):
    text = "\n".join(lines).strip("\n")
    return [text] if text else []


def write_sections(target, lines):
    """Writes `lines` into `target`: their sections replace those of the same heading (or are added at
    the end), their preamble, if any, the file's; every other section stays as it was."""
    old = open(target, encoding="utf-8").read().split("\n") if os.path.exists(target) else []
    old_preamble, old_sections = split(old)
    new_preamble, new_sections = split(lines)
    new = dict(new_sections)
    blocks = trimmed(new_preamble) or trimmed(old_preamble)
    blocks += [block for heading, body in old_sections for block in trimmed(new.pop(heading, body))]
    blocks += [block for heading, body in new_sections if heading in new for block in trimmed(body)]
    with open(target, "w", encoding="utf-8") as out:
        out.write("\n\n".join(blocks) + "\n")

