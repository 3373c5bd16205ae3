#!/usr/bin/env python3
"""bench/run's report: one table on stdout, and BENCHMARKS.md (machine, date, commands, figures)."""

import os
import platform
import subprocess
import sys
from datetime import datetime, timezone

results_path, variants_path, out_path, gen_time = sys.argv[1:5]
env = os.environ
MB = 1e6


def num(name):
    value = env.get(name, "")
    return float(value) if value else 0.0


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


rows = {}
for line in open(results_path):
    name, step, wall, cpu, rss, stored = line.rstrip("\n").split("\t")
    rows[(name, step)] = dict(wall=float(wall), cpu=float(cpu), rss_kib=int(rss), bytes=int(stored))

input_bytes = num("INPUT_APPARENT")
logical = num("INPUT_LOGICAL")
grown = num("GROWN_APPARENT")
tools = ["ctxfold", "ctxfold-noseeds", "ctxfold-large", "restic", "borg", "git", "zstd3", "tarzst"]
label = {
    "ctxfold": "ctxfold fold --apply",
    "ctxfold-noseeds": "ctxfold fold --apply --no-seeds",
    "ctxfold-large": "ctxfold fold --apply, large segmentation",
    "restic": "restic backup",
    "borg": "borg create zstd,3",
    "git": "git add+commit+gc",
    "zstd3": "zstd -3 per file",
    "tarzst": "tar \\| zstd -19 --long=31",
}


def rate(nbytes, seconds):
    return f"{nbytes / MB / seconds:,.0f}" if seconds > 0 else "-"


def mib(kib):
    return f"{kib / 1024:,.0f}"


table = [
    "| tool | backup s (CPU s) | MB/s | peak MiB | store bytes on disk | restore s | restore MB/s | "
    "ctxfold (default) bytes / this row | its backup time / this row | its restore time / this row |",
    "|---|---|---|---|---|---|---|---|---|---|",
]
cx_b, cx_r = rows[("ctxfold", "backup")], rows[("ctxfold", "restore")]
for tool in tools:
    b, r = rows.get((tool, "backup")), rows.get((tool, "restore"))
    if not b:
        continue
    ratio = lambda a, c: f"{a / c:.2f}" if c else "-"
    table.append(
        f"| {label[tool]} | {b['wall']:.1f} ({b['cpu']:.1f}) | {rate(input_bytes, b['wall'])} | {mib(max(b['rss_kib'], r['rss_kib']))} | "
        f"{b['bytes']:,} | {r['wall']:.1f} | {rate(input_bytes, r['wall'])} | {ratio(cx_b['bytes'], b['bytes'])} | "
        f"{ratio(cx_b['wall'], b['wall'])} | {ratio(cx_r['wall'], r['wall'])} |"
    )

incremental = [
    "| step | wall s (CPU s) | peak MiB | store bytes after | bytes added |",
    "|---|---|---|---|---|",
]
for tool, first in [("ctxfold", "backup"), ("ctxfold-noseeds", "backup"), ("ctxfold-large", "backup"), ("restic", "backup"), ("borg", "backup")]:
    g = rows.get((tool, "grow"))
    if g:
        incremental.append(
            f"| {label[tool]} after 10% growth | {g['wall']:.1f} ({g['cpu']:.1f}) | {mib(g['rss_kib'])} | {g['bytes']:,} | "
            f"{g['bytes'] - rows[(tool, first)]['bytes']:,} |"
        )
for tool in ["ctxfold", "ctxfold-noseeds", "ctxfold-large"]:
    r = rows.get((tool, "refold"))
    if r:
        incremental.append(
            f"| {label[tool]}: re-fold, corpus unchanged | {r['wall']:.1f} ({r['cpu']:.1f}) | {mib(r['rss_kib'])} | "
            f"{r['bytes']:,} | {r['bytes'] - rows[(tool, 'backup')]['bytes']:,} |"
        )

# Targets.
def verdict(ok):
    return "met" if ok else "**missed**"


def targets_for(tool):
    b, r, rf, g = (rows[(tool, step)] for step in ["backup", "restore", "refold", "grow"])
    store = b["bytes"]
    peak = max(rows[(tool, s)]["rss_kib"] for s in ["backup", "refold", "restore", "grow"])
    peer = lambda name: rows[(name, "backup")]["bytes"]
    # Issue 10's and issue 11's targets for this corpus (the fork corpus has bench/forks).
    return [
        ("store ≤ 0.8× borg (issue 10)", store <= 0.8 * peer("borg"), f"{store / peer('borg'):.2f}×"),
        ("fold ≥ 200 MB/s of source (issue 11: with seeds)", input_bytes / b["wall"] >= 200 * MB, f"{rate(input_bytes, b['wall'])} MB/s on disk, {rate(logical, b['wall'])} MB/s of JSONL"),
        ("re-fold unchanged ≥ 2 GB/s (issue 11)", input_bytes / rf["wall"] >= 2000 * MB, f"{rate(input_bytes, rf['wall'])} MB/s"),
        ("re-fold after 10% growth ≤ 15% of the first fold (issue 11)", g["wall"] <= 0.15 * b["wall"], f"{g['wall'] / b['wall']:.2f}× the first fold"),
        ("restore ≥ 500 MB/s (issue 11)", input_bytes / r["wall"] >= 500 * MB, f"{rate(input_bytes, r['wall'])} MB/s"),
        ("peak memory < 256 MiB (issues 10, 11)", peak < 256 * 1024, f"{mib(peak)} MiB"),
    ]


configs = [t for t in ["ctxfold", "ctxfold-noseeds", "ctxfold-large"] if (t, "grow") in rows]
target_lines = ["| target | " + " | ".join(label[t] for t in configs) + " |", "|---" * (len(configs) + 1) + "|"]
per_config = [targets_for(t) for t in configs]
for i, (name, _, _) in enumerate(per_config[0]):
    target_lines.append(f"| {name} | " + " | ".join(f"{verdict(c[i][1])}: {c[i][2]}" for c in per_config) + " |")

objects, packs, manifests = int(num("OBJECTS")), int(num("PACKS")), int(num("MANIFESTS"))
oa, ob = num("OBJ_APPARENT"), num("OBJ_ALLOCATED")
ma, mb = num("MAN_APPARENT"), num("MAN_ALLOCATED")
layout = (
    f"After the fold and the 10% growth, the default store's objects are {packs:,} packs (with their "
    f"indexes) and {objects:,} loose files: {oa:,.0f} bytes in {ob:,.0f} bytes of disk blocks "
    f"({100 * (ob - oa) / ob if ob else 0:.1f}% lost to block rounding); its {manifests:,} manifests "
    f"take {mb:,.0f} bytes of blocks for {ma:,.0f} bytes. The seed indexes, {num('SEED_INDEX_RAW'):,.0f} "
    f"bytes raw, are packed with the objects."
)

variant_lines = []
KEPT = "(Not rerun in this run (--skip-variants): this section is kept from the run of "
if os.path.getsize(variants_path) == 0 and os.path.exists(out_path):
    # --skip-variants: keep the section as it was measured, saying when.
    previous = open(out_path).read()
    heading = "## Levels and dictionaries\n"
    if heading in previous:
        section = previous.split(heading, 1)[1].split("\n## ", 1)[0].strip("\n").split("\n")
        if section[0].startswith(KEPT):
            variant_lines = section
        elif not section[0].startswith("(skipped"):
            date = next((l[len("- date: "):] for l in previous.split("\n") if l.startswith("- date: ")), "an earlier date")
            variant_lines = [KEPT + date + ".)", ""] + section
if os.path.getsize(variants_path) > 0:
    base = {"fixtures": num("FIX_ZSTD"), "generated-128M": num("SMALL_ZSTD")}
    variant_lines = [
        "| corpus | segmentation | zstd level | dictionary | object bytes | bytes on disk | object bytes / per-file zstd -3 |",
        "|---|---|---|---|---|---|---|",
    ]
    for line in open(variants_path):
        fields = line.split()
        corpus, level, dictionary, apparent, allocated = fields[:5]
        segmentation = fields[5] if len(fields) > 5 else "contract"
        b = base.get(corpus) or 0
        variant_lines.append(
            f"| {corpus} | {segmentation} | {level} | {dictionary} | {int(apparent):,} | {int(allocated):,} | {int(apparent) / b if b else 0:.2f} |"
        )
    variant_lines.append("")
    variant_lines.append(
        f"Per-file zstd -3: fixtures {num('FIX_ZSTD'):,.0f} bytes (of {num('FIX_APPARENT'):,.0f}); "
        f"generated-128M {num('SMALL_ZSTD'):,.0f} bytes (Codex's own .zst archives counted as they are). "
        "Segmentation `contract`: fold-v1's default settings (fields from 4 KiB, residual CDC 4/16/64 KiB); "
        "`large`: fields from 32 KiB, residual CDC 64/256/1024 KiB (recorded in each manifest's settings, so any "
        "fold-v1 reader restores them). Object bytes include the dictionary object."
    )

cpu_model = sh("lscpu | sed -n 's/^Model name: *//p'")
memory = sh("free -g | awk '/^Mem:/ {print $2}'")
filesystem = sh(f"df -T {os.path.dirname(os.path.abspath(results_path))} | awk 'NR==2 {{print $2}}'")
versions = "; ".join(sh(c) for c in ["rustc --version", "restic version | cut -d' ' -f1-2", "borg --version", "git --version", "zstd --version"])
machine = [
    f"- CPU: {cpu_model} ({os.cpu_count()} cores, shared: other jobs ran during the benchmark)",
    f"- memory: {memory} GiB; kernel {platform.release()}; filesystem {filesystem}",
    f"- {versions}",
    f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
]

corpus_line = (
    f"`gen-corpus --size {env.get('SIZE')} --seed {env.get('SEED')}` wrote {int(num('INPUT_FILES')):,} session files in {gen_time} s: "
    f"{input_bytes:,.0f} bytes on disk (apparent; {num('INPUT_ALLOCATED'):,.0f} allocated), {logical:,.0f} bytes of JSONL once "
    f"Codex's `.jsonl.zst` archives are decompressed; `--grow 10%` brought it to {grown:,.0f} bytes. MB/s are over the "
    f"apparent bytes on disk, the input every tool reads."
)

text = "\n".join(
    [
        "# Benchmarks",
        "",
        "Written by `bench/run` (rerun it rather than edit; the last section holds notes written after the run). ctxfold beside restic, borg, git and zstd on one",
        "generated corpus, in one run, on this machine:",
        "",
        *machine,
        "",
        "## Corpus",
        "",
        corpus_line,
        "",
        "## Backup and restore",
        "",
        *table,
        "",
        "## Incremental",
        "",
        *incremental,
        "",
        "## Targets",
        "",
        *target_lines,
        "",
        "## Where the store's bytes go",
        "",
        layout,
        "",
        "## Levels and dictionaries",
        "",
        *(variant_lines or ["(skipped: --skip-variants)"]),
        "",
        "## Commands",
        "",
        "Exactly what `bench/run` runs (see the script; `$CORPUS` holds `codex-home/` and `pi-agent/`):",
        "",
        "```",
        "ctxfold:  CODEX_HOME=$CORPUS/codex-home PI_CODING_AGENT_DIR=$CORPUS/pi-agent ctxfold fold --apply --json [--no-seeds | LARGE]",
        "          (the same again for the unchanged re-fold, and after growth, which refolds the grown sessions)",
        "          LARGE: --field-threshold 32768 --cdc-min-bytes 65536 --cdc-average-bytes 262144 --cdc-max-bytes 1048576",
        "          restore: ctxfold restore --all --to DIR/ (every session, on both cores)",
        "restic:   restic init; restic backup codex-home pi-agent; restic restore latest --target DIR",
        "borg:     borg init --encryption=none; borg create --compression zstd,3 ::one codex-home pi-agent; borg extract ::one",
        "git:      git add -A; git commit; git gc; restore: git --work-tree=DIR checkout HEAD -- .",
        "zstd -3:  zstd -3 -c FILE > FILE.zst per file, 2 at a time (Codex's .zst archives copied as they are); zstd -d per file",
        "tar|zstd: tar -cf - codex-home pi-agent | zstd -19 --long=31 -T2; zstd -d --long=31 | tar -x",
        "grow:     gen-corpus --grow 10%, then ctxfold fold --apply, restic backup again, borg create ::two",
        "          (each with the grown corpus read into the page cache first, as it was for the first backups)",
        "timing:   /usr/bin/time -f '%e %U %S %M' (wall, user + sys, peak RSS of the largest process); bytes: du -s --block-size=1",
        "          every step ends with sync; every restore writes to a folder whose blocks were written and freed before",
        "```",
        "",
    ]
)
open(out_path, "w").write(text)
print("\n".join(table + [""] + incremental + [""] + target_lines + ["", layout]))
