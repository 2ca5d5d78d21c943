# Sourced by setup.sh and gpu-proof.sh: llama_cpu_flags prints the CMake flags for llama.cpp's CPU code.
#
# llama.cpp's native build (-march=native) compiles its AMX kernels on CPUs that list AMX, and in some
# virtual machines those CPUs list AMX while the first AMX instruction crashes the process (seen on the
# CPU-only machines: a segfault at the first prompt of real length). There the
# native instruction sets are named one by one instead, AMX left out (a few percent of prompt speed on
# bare metal; nothing for answers from GPUs). Elsewhere it prints nothing: the native build is kept.
llama_cpu_flags() {
    local flags
    flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
    [[ " $flags " == *" amx_tile "* ]] || return 0
    local args="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    local flag option
    for flag in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx_vnni:AVX_VNNI avx512f:AVX512 \
                avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16; do
        option=${flag#*:}
        [[ " $flags " == *" ${flag%%:*} "* ]] && args+=" -DGGML_${option}=ON" || args+=" -DGGML_${option}=OFF"
    done
    echo "$args"
}
