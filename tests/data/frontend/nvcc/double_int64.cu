// 64-bit and double math: f64 division/sqrt/rcp (the slow-path
// subroutines), fma.rn.f64, double transcendental calls inlined from
// libdevice, 64-bit integer division/remainder (div.s64 / rem.u64),
// mul.hi / mul.wide / mad.wide, 128-bit __int128, cvt.rzi/rni with
// saturation, copysign, frexp/ldexp, isnan/isinf via testp.
// @variant sm89 -arch=sm_89 -O3

__global__ void f64_kernel(double *out, const double *in, long long *iout, const long long *iin, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double x = in[i], y = in[n + i];
    double r = x / y + sqrt(x) + 1.0 / y + fma(x, y, 0.5);
    r += exp(x) * log1p(y) + sin(x) * cos(y) + pow(x, y) + atan2(y, x);
    int ex;
    double mant = frexp(r, &ex);
    r = ldexp(mant, ex + 1) + copysign(1.0, -x) + (isnan(y) ? 1.0 : 0.0) + (isinf(x) ? 2.0 : 0.0);
    out[i] = r + rint(x) + trunc(y) + (double)(float)x + __dmul_rz(x, y) + __dadd_ru(x, y) + __drcp_rn(y);
    long long a = iin[i], b = iin[n + i] | 1;
    unsigned long long ua = (unsigned long long)a;
    __int128 wide = (__int128)a * b;
    iout[i] = a / b + a % b + (long long)(ua / 7u) + (long long)(ua % 1000003u) + __mul64hi(a, b)
              + (long long)__umul64hi(ua, 0x9e3779b97f4a7c15ull) + (long long)(wide >> 70)
              + __double2ll_rz(x) + (long long)__double2uint_rn(y) + __float2ll_rd((float)x);
    iout[n + i] = (long long)__brevll(ua) + __clzll(a) + __ffsll(b) + (long long)__double_as_longlong(x);
}
