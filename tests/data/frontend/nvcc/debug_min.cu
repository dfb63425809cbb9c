// The smallest -G build: `.target sm_89, debug`, which makes ptxas
// generate debug-mode (unoptimised) SASS, in which `[%rd+0]` and `[%rd]`
// are *not* the same (the +0 costs an IADD3 pair). Keep it tiny: it is
// the reproducer for front ends that drop a +0 address offset.
// @variant sm89G -arch=sm_89 -G

__global__ void debug_min(float *p, int i)
{
    float a[2];
    a[0] = p[0];
    a[1] = 2.0f;
    p[1] = a[i & 1];
}
