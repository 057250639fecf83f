# PIQ_CHECK_SIMD(NAME, suffix, FLAGS, LEVEL)
# ------------------------------------------
# One macro per ISA unit, so that the compile flags of piquant/simd/piq-kernels-SUFFIX.c,
# the AM_CONDITIONAL that builds it and the CPU-feature mask its table requires at run time
# all come from the same FLAGS and cannot drift apart.
#
# Defines:  PIQ_BUILD_NAME (AM_CONDITIONAL), PIQ_NAME_CFLAGS (AC_SUBST),
#           and appends "X (NAME, suffix)" to piq_simd_units, which PIQ_SIMD_UNITS_DEFINE
#           turns into the C list PIQ_SIMD_UNITS(X) that dispatch reads (the one ISA list:
#           call PIQ_CHECK_SIMD in increasing SIMD level),
#           PIQ_NAME_REQUIRED (AC_SUBST and C define): the OR of PIQ_CPU_<FEATURE> bits,
#           one per -m<feature> flag ("-msse4.2" -> PIQ_CPU_SSE4_2, "-mamx-int8" ->
#           PIQ_CPU_AMX_INT8). piquant/piq-cpu-private.h
#           lists every feature once; a flag with no entry there fails the build.
# NEON (aarch64) takes no flags and has the baseline mask PIQ_CPU_NEON; NEONDOT adds
# FEAT_DotProd (PIQ_CPU_DOTPROD, from Linux's AT_HWCAP).
AC_DEFUN([PIQ_CHECK_SIMD], [
  AC_REQUIRE([AC_CANONICAL_HOST])
  piq_simd_ok=no
  piq_simd_cflags="$3"
  AS_CASE([$host_cpu:$1],
    [x86_64:NEON*|i?86:NEON*|aarch64:SSE*|aarch64:AVX*|aarch64:AMX], [piq_simd_ok=no],
    [aarch64:NEON], [piq_simd_ok=yes; piq_simd_required="PIQ_CPU_NEON"],
    [aarch64:NEONDOT], [
      AX_CHECK_COMPILE_FLAG([$3], [piq_simd_ok=yes], [piq_simd_ok=no], [-Werror])
      piq_simd_required="PIQ_CPU_NEON|PIQ_CPU_DOTPROD"],
    [x86_64:*], [
      AX_CHECK_COMPILE_FLAG([$3], [piq_simd_ok=yes], [piq_simd_ok=no], [-Werror])
      piq_simd_required=""
      for piq_flag in $3; do
        piq_feature=`echo "$piq_flag" | $SED -e 's/^-m//' -e 's/\./_/g' -e 's/-/_/g' | tr 'a-z' 'A-Z'`
        piq_simd_required="${piq_simd_required:+$piq_simd_required|}PIQ_CPU_$piq_feature"
      done])
  AC_ARG_ENABLE([$2],
    [AS_HELP_STRING([--disable-$2], [do not build the $1 kernels])],
    [AS_IF([test "x$enableval" = "xno"], [piq_simd_ok=no])])
  AS_IF([test "x$piq_simd_ok" = "xyes"], [
    PIQ_$1_CFLAGS="$piq_simd_cflags"
    PIQ_$1_REQUIRED="($piq_simd_required)"
    AC_DEFINE_UNQUOTED([PIQ_HAVE_$1], [1], [Define if the $1 kernel unit is built])
    AC_DEFINE_UNQUOTED([PIQ_$1_REQUIRED], [$PIQ_$1_REQUIRED], [CPU features the $1 unit is compiled for])
    piq_simd_built="$piq_simd_built $2"
    piq_simd_units="$piq_simd_units X ($1, $2)"
  ])
  AC_SUBST([PIQ_$1_CFLAGS])
  AM_CONDITIONAL([PIQ_BUILD_$1], [test "x$piq_simd_ok" = "xyes"])
])

# PIQ_SIMD_UNITS_DEFINE
# ---------------------
# After every PIQ_CHECK_SIMD: define PIQ_SIMD_UNITS(X) in config.h, the units built, in
# increasing level, so piquant/simd/piq-dispatch.c declares and merges exactly them.
AC_DEFUN([PIQ_SIMD_UNITS_DEFINE], [
  AC_DEFINE_UNQUOTED([PIQ_SIMD_UNITS(X)], [$piq_simd_units],
                     [The SIMD kernel units built, in increasing level: X (NAME, suffix)])
])
