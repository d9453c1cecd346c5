"""The storage study's site check (issue 28 part 4): the site edit a full cluster run needs, named by
its key. config/config.yaml ships ``storage.paths.lustre_dir: null`` (no Lustre known): Lustre+MinIO
and mdtest's Lustre side are then not run and their claims say why; with a directory set, it must be
on Lustre (studies/storage/lustre.py: statfs magic, refused otherwise -- every job that uses it
checks again at its start).

    python3 -m studies.storage.site_check --config CFG [--out results/storage/site_check.json]

problems(cfg) lists what is missing or wrong (each line starts with the key); [] = the site is set.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from repro import cli

from studies.storage import lustre


def problems(cfg: dict, magic: int | None = None) -> list[str]:
    """The site edits the storage section lacks; ``magic``: judge the Lustre directory by that statfs
    magic instead of reading the file system (tests; lustre.refusal)."""
    if "lustre-minio" not in cfg.get("stacks", []):
        return []
    d = (cfg.get("paths") or {}).get("lustre_dir")
    if not d:
        return [f"{lustre.KEY} = null: no Lustre directory on this site -- Lustre+MinIO and mdtest's Lustre side "
                "are not run and their claims say 'not run' (set a directory on the site's Lustre file system)"]
    why = lustre.refusal(d, magic)
    return [why] if why else []


def main(argv=None) -> int:
    a, cfg = cli.finish(cli.options(cli.parser(__doc__), out=""), argv)
    bad = problems(cfg)
    if bad:
        print("storage: the cluster config needs a site edit (config/config.yaml or an overlay, e.g. "
              "config/site-example.yaml):\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps({"lustre_dir": cfg["paths"]["lustre_dir"],
                                           "statfs_magic": f"{lustre.LUSTRE_MAGIC:#010x}"}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
