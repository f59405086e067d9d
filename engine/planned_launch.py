"""Plan a model on this machine and hand back the spec to load: detection, the model's
profile, the Plan, llama.cpp's dry run of it, and the spec (:func:`engine.launch.spec_of_plan`).

What the CLI's ``chat``, ``bench`` and ``serve`` load; on an out-of-memory load they call
it again with the :class:`engine.launch.ReplanLadder` that says what changes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.launch import LaunchSpec, ReplanLadder, spec_of_plan, unplanned_spec
from planner.request import Request

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlannedLaunch:
    """A spec to load, and the Plan it came from (its JSON), when the planner ran."""

    spec: LaunchSpec
    plan: dict[str, Any] | None
    note: str = ""

    @property
    def predicted(self) -> dict[str, Any] | None:
        """The Plan's ``predicted`` speeds, if there is a Plan."""
        return dict(self.plan["predicted"]) if self.plan else None



def plan_launch(model_path: str, *, context: int = 4096, parallel: int = 1,
                prompt_tokens: int = 512, n_threads: int | None = None,
                overrides: Mapping[str, Any] | None = None,
                depth: int = 0, workers: Sequence[str] = (),
                ladder: ReplanLadder | None = None,
                mmproj_path: str | None = None,
                mmproj_offload: bool = True) -> PlannedLaunch:
    """Plan the model on this machine and return the spec of that Plan.

    ``overrides`` use the planner's request names (``n_gpu_layers``, ``n_cpu_moe``,
    ``tensor_split``, ``kv_type``). ``depth``: the tokens already in the cache while
    decoding, for the prediction. ``workers``: RPC workers (``HOST:PORT``) whose devices
    the plan may use; unreachable ones are left out, with a note. ``ladder``: after a load
    ran out of memory, the re-plan its next rung asks for (:class:`ReplanLadder`; the
    spec is recorded in it as the one being loaded). ``mmproj_path``: a
    vision projector planned beside the model (its memory held back first). When the
    planner is unavailable or fails, a default spec (all layers on the engine's default
    device, f16 KV) is returned with a note.
    """
    pins = {k: v for k, v in (overrides or {}).items() if v is not None}
    try:
        from engine import run_records
        from engine.gguf_file import load_profile
        from engine.hardware import detect
        from planner.plan import plan

        profile = load_profile(model_path)
        request = Request(context=context, parallel=parallel, prompt_tokens=prompt_tokens,
                          depth=depth, advise=False, machine_runs=run_records.samples(),
                          **pins)
        if ladder is not None:
            request = ladder.request(request, profile.n_layers)
        inventory = detect(measure=False)
        if n_threads:  # priced with the threads it will run with
            inventory = replace(inventory, host=replace(inventory.host, cores=n_threads))
        note = ""
        if workers:
            from engine.hardware.workers import add_workers

            inventory = add_workers(inventory, list(workers))
            left = [n.split(":", 1)[1] for n in inventory.notes
                    if n.startswith("worker_unreachable:")]
            if left:
                note = "workers left out of the plan: " + ", ".join(left)
        if ladder is not None:
            inventory = ladder.inventory(inventory)
        if mmproj_path:
            from engine.gguf_file import load_projector
            from planner.plan import plan_with_projector

            the_plan = plan_with_projector(inventory, profile, request,
                                           load_projector(mmproj_path), mmproj_offload)
        else:
            the_plan = plan(inventory, profile, request)
        from engine.dry_run import check_of, confirm_for

        confirmed = confirm_for(model_path, inventory, request, the_plan)  # llama.cpp's view
        # a re-plan by the dry run knows nothing of the projector: the projector's plan stays
        the_plan = the_plan if mmproj_path and confirmed is not the_plan else confirmed
        doc = the_plan.to_json()
        check = check_of(the_plan)
        if check is not None:
            doc["dry_run"] = check.to_json()
        spec = spec_of_plan(model_path, the_plan, n_threads=n_threads, mmproj_path=mmproj_path)
        if ladder is not None:
            spec = ladder.spec(spec)
            ladder.loading(spec, doc)
        return PlannedLaunch(spec, doc, note=note)
    except Exception as exc:  # the default path must keep working while the planner grows
        log.warning("planning failed (%s: %s); using the default launch", type(exc).__name__,
                    exc)
        return PlannedLaunch(unplanned_spec(model_path, context, parallel, n_threads, pins),
                             None, note=f"not planned: {type(exc).__name__}: {exc}")
