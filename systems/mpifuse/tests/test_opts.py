"""The -o option table of src/util.c read back field by field: the defaults, every plain option
(size with its minimum, boolean, non-negative number) landing in its own field, the special ones,
and the errors. A small C program links libmpifuse.so and prints struct mfs_opts as JSON after
mfs_default_opts + mfs_parse_opts."""
import json
import os
import subprocess

import pytest

from mpifuse_testlib import LIB, SYS
from mpifuse_testlib import built  # noqa: F401  (pytest fixture)

PROGRAM = r"""
#include "mfs.h"
int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        struct mfs_opts o;
        char err[256] = "";
        mfs_default_opts(&o);
        int rc = mfs_parse_opts(&o, argv[i], err, sizeof(err));
        printf("{\"rc\":%d,\"err\":\"%s\",\"max_read\":%zu,\"threads\":%d,\"max_threads\":%d,"
               "\"keep_cache\":%d,\"splice\":%d,\"timeout\":%.17g,\"linger\":%.17g,"
               "\"stop_grace\":%.17g,\"idle_cache\":%llu,\"mem_cap\":%llu,\"spool\":\"%s\","
               "\"chunk\":%llu,\"cache\":%llu,\"block\":%llu,\"bcast_rr\":%d,\"bcast_depth\":%d,"
               "\"bcast_on_demand\":%d,\"bcast_sync\":%d,\"attr_timeout\":%.17g,"
               "\"allow_other\":%d,\"readahead_kb\":%ld,\"poll_us\":%u,\"idle_poll_us\":%u,"
               "\"align\":%llu,\"zero_copy\":%d,\"meta_buffer\":%d,\"map_source\":%d,"
               "\"io_uring\":%d,\"verbose\":%d}\n",
               rc, err, o.max_read, o.threads, o.max_threads, o.keep_cache, o.splice, o.timeout,
               o.linger, o.stop_grace, (unsigned long long)o.idle_cache,
               (unsigned long long)o.mem_cap, o.spool, (unsigned long long)o.chunk,
               (unsigned long long)o.cache, (unsigned long long)o.block, o.bcast_rr,
               o.bcast_depth, o.bcast_on_demand, o.bcast_sync, o.attr_timeout, o.allow_other,
               o.readahead_kb, o.poll_us, o.idle_poll_us, (unsigned long long)o.align,
               o.zero_copy, o.meta_buffer, o.map_source, o.io_uring, o.verbose);
    }
    return 0;
}
"""

MIB = 1 << 20
DEFAULTS = {
    "rc": 0, "err": "", "max_read": MIB, "threads": 1, "max_threads": 8, "keep_cache": 0,
    "splice": 0, "timeout": 60.0, "linger": 5.0, "stop_grace": -1.0, "idle_cache": 4 << 30,
    "mem_cap": 0, "chunk": 4 * MIB, "cache": 0, "block": 4 * MIB, "bcast_rr": 0, "bcast_depth": 4,
    "bcast_on_demand": 0, "bcast_sync": -1, "attr_timeout": 1.0, "allow_other": 0,
    "readahead_kb": 0, "poll_us": 200, "idle_poll_us": 2000, "align": 4096, "zero_copy": 0,
    "meta_buffer": 1, "map_source": 0, "io_uring": 0, "verbose": 0, "spool": "$TMPDIR",
}
SIZES = {"max_read": 4096, "max_threads": 1, "idle_cache": 0, "mem_cap": 0, "chunk": 0, "cache": 0,
         "block": 1, "bcast_depth": 1, "poll_us": 1, "idle_poll_us": 1, "align": 1}
BOOLS = {"threads": "threads", "keep_cache": "keep_cache", "kernel_cache": "keep_cache",
         "splice": "splice", "bcast_on_demand": "bcast_on_demand", "allow_other": "allow_other",
         "verbose": "verbose", "meta_buffer": "meta_buffer", "zero_copy": "zero_copy",
         "map_source": "map_source", "io_uring": "io_uring"}
NUMBERS = ["timeout", "linger", "stop_grace", "attr_timeout"]


@pytest.fixture(scope="module")
def parse(built, tmp_path_factory):  # noqa: F811
    d = tmp_path_factory.mktemp("opts")
    (d / "opts.c").write_text(PROGRAM)
    exe = d / "opts"
    subprocess.run(["mpicc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(SYS, "src"),
                    *subprocess.check_output(["pkg-config", "--cflags", "fuse3"], text=True).split(),
                    "-o", str(exe), str(d / "opts.c"), LIB, "-Wl,-rpath," + os.path.dirname(LIB)],
                   check=True)
    spool = str(d)

    def run(*opts):
        out = subprocess.run([str(exe), *opts], capture_output=True, text=True, check=True,
                             env={**os.environ, "TMPDIR": spool}).stdout
        got = [json.loads(line) for line in out.splitlines()]
        for g in got:  # the default spool directory is $TMPDIR
            g["spool"] = "$TMPDIR" if g["spool"] == spool else g["spool"]
        return got

    return run


def changed(got):
    """The fields that differ from the defaults (rc and err always); stop_grace -1 (auto) becomes
    min(5 s, timeout/2) once options were parsed without an error."""
    want = {**DEFAULTS, "stop_grace": 5.0 if got["rc"] == 0 else -1.0}
    return {k: v for k, v in got.items() if k in ("rc", "err") or v != want[k]}


def test_defaults(parse):
    nothing, verbose_off = parse("", "verbose=0")
    assert nothing == DEFAULTS
    assert verbose_off == {**DEFAULTS, "stop_grace": 5.0}


def test_each_size_option_lands_in_its_field_and_keeps_its_minimum(parse):
    names = list(SIZES)
    ok = parse(*(f"{n}=8KiB" for n in names))
    for name, got in zip(names, ok):
        if name == "bcast_depth":  # 8192 > 1024: the range check after the table
            assert changed(got) == {"rc": -1, "err": "bcast_depth must be <= 1024", "bcast_depth": 8192}
        else:
            assert changed(got) == {"rc": 0, "err": "", name: 8192}, name
    low = [n for n in names if SIZES[n]]
    for name, got in zip(low, parse(*(f"{n}={SIZES[n] - 1}" for n in low))):
        assert changed(got) == {"rc": -1, "err": f"bad value '{SIZES[name] - 1}' for option '{name}'"}
    zero = [n for n in names if not SIZES[n] and DEFAULTS[n]]
    for name, got in zip(zero, parse(*(f"{n}=0" for n in zero))):
        assert changed(got) == {"rc": 0, "err": "", name: 0}


def test_each_boolean_option_lands_in_its_field(parse):
    names = list(BOOLS)
    for word in ("off", "yes", ""):
        for name, got in zip(names, parse(*(f"{n}={word}" if word else n for n in names))):
            want = 0 if word == "off" else 1
            field = BOOLS[name]
            assert changed(got) == {"rc": 0, "err": "", **({field: want} if DEFAULTS[field] != want else {})}
    for name, got in zip(names, parse(*(f"{n}=maybe" for n in names))):
        assert changed(got) == {"rc": -1, "err": f"bad value 'maybe' for option '{name}'"}


def test_each_number_option_lands_in_its_field(parse):
    got = dict(zip(NUMBERS, parse("timeout=8.5", "linger=0.25", "stop_grace=0.5", "attr_timeout=30")))
    assert changed(got["timeout"]) == {"rc": 0, "err": "", "timeout": 8.5, "stop_grace": 4.25}
    assert changed(got["linger"]) == {"rc": 0, "err": "", "linger": 0.25}
    assert changed(got["stop_grace"]) == {"rc": 0, "err": "", "stop_grace": 0.5}
    assert changed(got["attr_timeout"]) == {"rc": 0, "err": "", "attr_timeout": 30.0}
    for name, got in zip(NUMBERS, parse(*(f"{n}=-1" for n in NUMBERS))):
        assert changed(got) == {"rc": -1, "err": f"bad value '-1' for option '{name}'"}


def test_special_options_and_errors(parse):
    got = parse("readahead_kb=off", "readahead_kb=64", "bcast_root=rr", "bcast_sync=none",
                "spool=/var/tmp/x", "nope=1", "max_read=2M", " threads=0, linger=2")
    assert [changed(g) for g in got] == [
        {"rc": 0, "err": "", "readahead_kb": -1},
        {"rc": 0, "err": "", "readahead_kb": 64},
        {"rc": 0, "err": "", "bcast_rr": 1},
        {"rc": 0, "err": "", "bcast_sync": 0},
        {"rc": 0, "err": "", "spool": "/var/tmp/x"},
        {"rc": -1, "err": "unknown option 'nope'"},
        {"rc": -1, "err": "max_read must be <= 1048576 (kernel limit of 256 pages)", "max_read": 2 * MIB},
        {"rc": 0, "err": "", "threads": 0, "linger": 2.0},
    ]
