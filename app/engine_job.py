"""Windows: the engines the app starts live in one Job Object that ends with the app.

An engine watches the app's process and stops when it ends (``engine.parent_watch``);
the job is the floor under that watch. It is made with ``KILL_ON_JOB_CLOSE``, and only
the app holds its handle: when the app's process ends, however it ends (a crash, Task
Manager's *End task*), Windows closes that handle and ends every process in the job, even
an engine stuck in a driver call whose watch cannot run, so no orphan keeps a GPU's
memory. Processes an engine starts join its job. Elsewhere nothing is done here: POSIX
engines hold the app's lifeline pipe (``app.engine_child``).

No Qt here.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading

log = logging.getLogger(__name__)

JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9  # JOBOBJECTINFOCLASS
PROCESS_TERMINATE = 0x0001
PROCESS_SET_QUOTA = 0x0100


class BasicLimits(ctypes.Structure):
    """``JOBOBJECT_BASIC_LIMIT_INFORMATION`` (winnt.h)."""

    _fields_ = [
        ("PerProcessUserTimeLimit", ctypes.c_int64),
        ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", ctypes.c_uint32),
        ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t),
        ("ActiveProcessLimit", ctypes.c_uint32),
        ("Affinity", ctypes.c_size_t),
        ("PriorityClass", ctypes.c_uint32),
        ("SchedulingClass", ctypes.c_uint32),
    ]


class IoCounters(ctypes.Structure):
    """``IO_COUNTERS`` (winnt.h)."""

    _fields_ = [(name, ctypes.c_uint64) for name in (
        "ReadOperationCount", "WriteOperationCount", "OtherOperationCount",
        "ReadTransferCount", "WriteTransferCount", "OtherTransferCount")]


class ExtendedLimits(ctypes.Structure):
    """``JOBOBJECT_EXTENDED_LIMIT_INFORMATION`` (winnt.h)."""

    _fields_ = [
        ("BasicLimitInformation", BasicLimits),
        ("IoInfo", IoCounters),
        ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t),
        ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    ]


def kill_on_close_limits() -> ExtendedLimits:
    """The job's only limit: end every process in it when its last handle closes."""
    limits = ExtendedLimits()
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
    return limits


_job: int | None = None
_job_lock = threading.Lock()


def contain(pid: int) -> bool:
    """Put process ``pid`` (an engine just started) into the app's job.

    Returns whether it is in the job: False off Windows, and on failure (logged; the
    engine's own watch of the app still ends it).
    """
    if sys.platform != "win32":
        return False
    global _job
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.CreateJobObjectW.restype = ctypes.c_void_p
    kernel32.OpenProcess.restype = ctypes.c_void_p
    kernel32.SetInformationJobObject.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                                 ctypes.c_void_p, ctypes.c_uint32]
    kernel32.AssignProcessToJobObject.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    kernel32.CloseHandle.argtypes = [ctypes.c_void_p]
    with _job_lock:
        if _job is None:
            job = kernel32.CreateJobObjectW(None, None)
            limits = kill_on_close_limits()
            if not job or not kernel32.SetInformationJobObject(
                    job, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION, ctypes.byref(limits),
                    ctypes.sizeof(limits)):
                log.warning("no job object for the engines (error %d)",
                            ctypes.get_last_error())
                if job:
                    kernel32.CloseHandle(job)
                return False
            _job = int(job)  # never closed: the app's end closes it
        process = kernel32.OpenProcess(PROCESS_SET_QUOTA | PROCESS_TERMINATE, False, pid)
        if not process:
            log.warning("engine %d not put in the job: OpenProcess failed (error %d)", pid,
                        ctypes.get_last_error())
            return False
        try:
            if not kernel32.AssignProcessToJobObject(_job, process):
                log.warning("engine %d not put in the job (error %d)", pid,
                            ctypes.get_last_error())
                return False
        finally:
            kernel32.CloseHandle(process)
    return True


def close_job() -> None:
    """Close the app's job now, ending every engine in it (tests stand in for the app's
    end with this)."""
    global _job
    if sys.platform != "win32":
        return
    with _job_lock:
        if _job is not None:
            kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
            kernel32.CloseHandle.argtypes = [ctypes.c_void_p]
            kernel32.CloseHandle(_job)
            _job = None
