/* Force-included (gcc -include) into the engine's C sources when it is cross-compiled
 * for Windows with mingw-w64 (packaging/windows_engine.py).
 *
 * ggml-cpu.c asks Windows not to throttle its worker threads with
 * SetThreadInformation(..., ThreadPowerThrottling, THREAD_POWER_THROTTLING_STATE ...).
 * mingw-w64 10 (Debian 12) declares the ThreadPowerThrottling class but not the state
 * structure or its constants; the Windows SDK (and newer mingw-w64) have them. They are
 * defined here exactly as the Windows SDK's processthreadsapi.h lays them out, and only
 * when the headers in use lack them.
 */
#ifndef LOADOUT_MINGW_COMPAT_H
#define LOADOUT_MINGW_COMPAT_H

#if defined(_WIN32) && defined(__MINGW32__)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#ifndef THREAD_POWER_THROTTLING_CURRENT_VERSION
#define THREAD_POWER_THROTTLING_CURRENT_VERSION 1
#define THREAD_POWER_THROTTLING_EXECUTION_SPEED 0x1
#define THREAD_POWER_THROTTLING_VALID_FLAGS (THREAD_POWER_THROTTLING_EXECUTION_SPEED)

typedef struct _THREAD_POWER_THROTTLING_STATE {
    ULONG Version;
    ULONG ControlMask;
    ULONG StateMask;
} THREAD_POWER_THROTTLING_STATE;
#endif
#endif

#endif /* LOADOUT_MINGW_COMPAT_H */
