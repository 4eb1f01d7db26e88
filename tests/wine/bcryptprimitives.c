/* Test-only stand-in for Windows' bcryptprimitives.dll, for running the cmsc DLL under Wine 8
 * (Debian 12), which lacks that DLL. Rust's std imports ProcessPrng from it (Windows 10+ has it);
 * this exports ProcessPrng over RtlGenRandom (SystemFunction036 in advapi32), which Wine has.
 * Built by `make wine-smoke` with MinGW next to the smoke test; never shipped in a zip. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length); /* RtlGenRandom */

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
