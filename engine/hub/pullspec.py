"""Pull specs: ``REPO[:QUANT]`` or ``hf:OWNER/REPO/FILE.gguf`` -> the files to download."""

from __future__ import annotations

from engine.hub import hubapi
from engine.hub.errors import HubNotFoundError
from engine.hub.quants import FileGroup, gguf_groups, pick_group
from engine.hub.remote import parse_spec, shard_names

# Tried in this order when a pull names no quantization.
DEFAULT_QUANTS = ("Q4_K_M", "Q4_K_XL", "IQ4_XS", "Q4_0", "MXFP4", "MXFP4_MOE", "Q5_K_M",
                  "Q6_K", "Q8_0")


def parse_pull_spec(spec: str) -> tuple[str, str | None, str | None]:
    """``REPO[:QUANT]`` or ``hf:OWNER/REPO/FILE.gguf`` -> (repo, quant, filename).

    Raises:
        BadSpecError: neither form.
    """
    if spec.startswith("hf:"):
        hub = parse_spec(spec)
        return hub.repo, None, hub.filename
    repo, _, quant = spec.partition(":")
    hubapi.check_repo_id(repo)
    return repo, (quant.upper() or None), None


def choose_files(repo: str, files: tuple[hubapi.RemoteFile, ...], quant: str | None,
                 filename: str | None) -> FileGroup:
    """The file group a pull spec names (a default quant when none is given).

    Raises:
        HubNotFoundError: nothing matches; the message lists the quants the repo has.
    """
    groups = gguf_groups(files)
    if filename is not None:
        wanted = set(shard_names(filename))
        chosen = tuple(f for f in files if f.path in wanted)
        if len(chosen) != len(wanted):
            raise HubNotFoundError(f"{repo} has no file {filename}")
        return FileGroup(quant=None, files=tuple(sorted(chosen, key=lambda f: f.path)))
    if not groups:
        raise HubNotFoundError(f"{repo} has no GGUF files")
    for q in ((quant,) if quant else DEFAULT_QUANTS):
        group = pick_group(groups, q)
        if group is not None:
            if not group.complete:
                raise HubNotFoundError(f"{repo}: the listing lacks shards of {group.first.path}")
            return group
    if quant is None and len(groups) == 1:
        return groups[0]
    have = sorted({g.quant or g.first.path for g in groups})
    raise HubNotFoundError(f"{repo} has no {quant or 'default'} file; it has: {', '.join(have)}")


def projector_for(files: tuple[hubapi.RemoteFile, ...], group: FileGroup
                  ) -> hubapi.RemoteFile | None:
    """The vision projector that goes with ``group``'s model in its repo folder (same
    pairing as a local folder: :func:`engine.models.pick_projector`), if any."""
    from engine.models import pick_projector

    folder = group.first.path.rpartition("/")[0]
    here = {f.path.rpartition("/")[2]: f for f in files
            if f.path.rpartition("/")[0] == folder and f.path.lower().endswith(".gguf")}
    chosen = pick_projector(group.first.path.rpartition("/")[2], list(here))
    return here[chosen] if chosen is not None else None
