#include "runtime/machine.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "smolinfer/error.h"

namespace smolinfer::runtime {

bool cpu_has_f16c() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
#else
    return false;
#endif
}

IsaLimit isa_limit() {
    static const IsaLimit limit = [] {
        const char* env = std::getenv("SMOLINFER_ISA");
        const std::string_view v = env ? env : "";
        if (v.empty() || v == "avx512") return IsaLimit::Avx512;
        if (v == "avx2") return IsaLimit::Avx2;
        if (v == "scalar") return IsaLimit::Scalar;
        throw Error("SMOLINFER_ISA must be avx512, avx2 or scalar (got '" + std::string(v) + "')");
    }();
    return limit;
}

bool cpu_has_avx512() {
#if defined(__x86_64__)
    static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                           __builtin_cpu_supports("avx512vnni") && isa_limit() == IsaLimit::Avx512;
    return ok;
#else
    return false;
#endif
}

void require_build_cpu_features() {
#if defined(__x86_64__) && defined(__AVX2__)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !cpu_has_f16c()) {
        throw Error(
            "this build of smolinfer needs a CPU with AVX2, FMA and F16C (x86-64-v3); "
            "rebuild with -DSMOLINFER_X86_64_V3=OFF for older CPUs");
    }
#endif
}

uint64_t physical_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return 0;
    return uint64_t(pages) * uint64_t(page);
}

}  // namespace smolinfer::runtime
