"""Every reason code detection writes into ``Inventory.notes``, ``Gpu.notes`` and
``Disk.notes``, with what it means in plain English.

Codes are stable strings (rig files, scripts and translations depend on them): add new
ones, never rename or remove. Some carry a suffix after a colon: the GPU index
(``gpu_lost:1``), a PCI address or an engine device name. The GUI translates by code;
the CLI prints these sentences.
"""

from __future__ import annotations

EXPLANATIONS: dict[str, str] = {
    # -- NVIDIA (NVML) --------------------------------------------------------------------
    "nvml_not_installed": "the nvidia-ml-py package is missing",
    "nvml_unavailable": "an NVIDIA card is present but its driver library (NVML) is not",
    "nvidia_driver_not_loaded": "the NVIDIA kernel driver is not loaded",
    "nvml_version_mismatch": "the NVIDIA driver was updated: reboot to load the new one",
    "nvml_no_permission": "no permission to query the NVIDIA driver",
    "nvml_too_old": "the NVIDIA driver is too old for this query",
    "nvml_error": "the NVIDIA driver returned an unexpected error",
    "nvml_device_error": "one NVIDIA GPU could not be read and was left out",
    "gpu_lost": "a GPU fell off the bus (check power and the PCIe slot)",
    "mig_enabled": "this GPU is split into MIG instances, listed one by one",
    "mig_instance": "a MIG instance: its bandwidth is its share of the whole GPU",
    # -- AMD (amdsmi / sysfs) --------------------------------------------------------------
    "amdgpu_driver_not_loaded": "an AMD card is present but the amdgpu driver is not loaded",
    "amdgpu_memory_unreadable": "the amdgpu driver does not report this GPU's memory",
    "amdsmi_device_error": "one AMD GPU could not be read through amdsmi",
    "unified_memory_gtt": "an integrated GPU: it uses system RAM (its carve-out plus GTT)",
    "free_capped_by_host_ram": "free GPU memory limited to the RAM still available",
    # -- Apple ----------------------------------------------------------------------------
    "gpu_share_estimated": "the GPU's share of unified memory is estimated (no Metal engine)",
    # -- figures --------------------------------------------------------------------------
    "bandwidth_driver_peak": "memory bandwidth is the driver's peak (bus width x clock)",
    "bandwidth_nominal": "memory bandwidth is the data-sheet figure for this GPU",
    "bandwidth_unknown": "unknown GPU: a typical memory bandwidth is assumed",
    "pcie_unknown": "the PCIe link was not reported: a typical figure is assumed",
    "zero_free_reported": "the driver reports no free memory on this GPU",
    "free_from_engine": "free memory taken from the engine (the driver reported none)",
    "host_bandwidth_default": "RAM bandwidth not measured: a typical figure is assumed",
    "cpu_core_rate_default": "what one CPU core computes was not measured: typical figures "
                             "at the CPU's clock are assumed",
    "host_busy_while_measuring": "the CPUs were busy while RAM bandwidth was measured: run "
                                 "'loadout detect --remeasure' when the machine is idle",
    "gpu_probe_unavailable": "GPU bandwidth is the driver's peak: install loadout[probe] "
                             "(torch) to measure it",
    "gpu_probe_unmatched": "a GPU measured by torch matched none of the detected GPUs",
    # -- the engine's own devices ---------------------------------------------------------
    "engine_devices_unavailable": "the engine's device list could not be read",
    "engine_has_no_gpu_backend": "the engine was built for the CPU only: rebuild it with "
                                 "CMAKE_ARGS for your GPU (see README)",
    "not_seen_by_engine": "the engine cannot use this GPU (hidden by *_VISIBLE_DEVICES, or "
                          "an engine built without its backend)",
    "seen_by_engine_only": "found only through the engine (no vendor driver query)",
    "software_device": "a software device computing on the CPU (e.g. Mesa's lavapipe): "
                       "no speed prediction for it, the plan's figures are nominal",
    "engine_backend_vulkan": "the engine drives this GPU through Vulkan",
    "engine_backend_cuda": "the engine drives this GPU through CUDA",
    "engine_backend_rocm": "the engine drives this GPU through ROCm",
    "engine_backend_sycl": "the engine drives this GPU through SYCL",
    "engine_backend_metal": "the engine drives this GPU through Metal",
    "engine_backend_rpc": "the engine reaches this GPU over the network (RPC)",
    "engine_device_unknown_backend": "an engine device of an unknown kind was ignored",
    "duplicate_engine_device": "the same GPU appears twice in the engine (two backends): "
                               "one is used",
    "engine_ram_mismatch": "the engine and the system disagree on the RAM size",
    "gpu_disappeared": "this GPU is gone since detection: it is left out",
    # -- RPC workers ----------------------------------------------------------------------
    "worker_unreachable": "an RPC worker could not be used (refused, timed out or busy) "
                          "and was left out",
    "link_nominal": "the network link to this worker was not measured: a typical figure "
                    "is used",
    "same_host": "this worker runs on this same machine: it adds no memory or speed",
    # -- disks ----------------------------------------------------------------------------
    "folder_missing": "the model folder does not exist",
    "models_folder_unusable": "Loadout's models folder cannot be created (check "
                              "LOADOUT_HOME and the folder's permissions)",
    "device_unknown": "the disk under this folder could not be identified",
    "ram_backed": "this folder lives in RAM (tmpfs)",
    "virtual_disk": "a virtual machine's disk: its kind is unknown",
    "virtual_block_device": "a loop or RAM block device",
    "temp_file": "read speed measured on a temporary file",
    "page_cache_not_dropped": "the read may have come from the page cache",
    "page_cache_suspected": "the read came from RAM, not the disk: a typical figure is used",
    "read_nominal": "read speed not measured: a typical figure for this kind of disk",
    "read_probe_failed": "the read speed probe failed",
}


def explain(note: str) -> str:
    """The sentence for a note (its ``:suffix`` ignored); empty for an unknown code."""
    return EXPLANATIONS.get(note.split(":", 1)[0], "")
