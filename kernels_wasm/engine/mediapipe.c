/* MediaPipe's attention face mesh ops (python_ref/mediapipe_ops.py): the crop matrix from landmarks, the bilinear
 * crop of a feature map through it, and landmarks mapped back through it. Geometry in double. */
#include "engine.h"

int plan_mediapipe(wrt_model* m, wrt_op* op, wrt_cost* c) {
  const wrt_tensor* y = &m->t[op->out];
  uint64_t n = op->type == OP_LANDMARKS_TO_TRANSFORM_MATRIX ? (uint64_t)op->a.n_ints + 16 : y->count;
  c->work += WORK_SCALAR * 4 * n;
  return WRT_OK;
}

typedef double mat4[4][4];

static void mul4(mat4 a, mat4 b) { /* a = a * b */
  mat4 r;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      double s = 0;
      for (int k = 0; k < 4; k++) s += a[i][k] * b[k][j];
      r[i][j] = s;
    }
  rt_copy(a, r, sizeof r);
}

static void ident(mat4 a) {
  rt_zero(a, sizeof(mat4));
  for (int i = 0; i < 4; i++) a[i][i] = 1;
}

static void landmarks_to_matrix(const wrt_attrs* a, const float* l, float* out) {
  const float *left = l + 3 * a->rotation_idx[0], *right = l + 3 * a->rotation_idx[1];
  double rot = (double)a->target_rotation - rt_atan2((double)right[1] - left[1], (double)right[0] - left[0]);
  double cr = rt_cos(rot), sr = rt_sin(rot);
  double lo[2] = {__builtin_inf(), __builtin_inf()}, hi[2] = {-__builtin_inf(), -__builtin_inf()};
  for (int i = 0; i < a->n_ints; i++) { /* the subset in the rotated frame */
    const float* p = l + 3 * a->ints[i];
    double x = cr * p[0] - sr * p[1], y = sr * p[0] + cr * p[1];
    lo[0] = x < lo[0] ? x : lo[0];
    lo[1] = y < lo[1] ? y : lo[1];
    hi[0] = x > hi[0] ? x : hi[0];
    hi[1] = y > hi[1] ? y : hi[1];
  }
  double mx = (lo[0] + hi[0]) / 2, my = (lo[1] + hi[1]) / 2;
  double oh = a->size[0], ow = a->size[1];
  mat4 t, r, s, sh;
  ident(t);
  t[0][3] = cr * mx + sr * my; /* the centre rotated back */
  t[1][3] = -sr * mx + cr * my;
  ident(r);
  r[0][0] = cr;
  r[0][1] = sr;
  r[1][0] = -sr;
  r[1][1] = cr;
  ident(s);
  s[0][0] = a->scales[0] * (hi[0] - lo[0]) / ow;
  s[1][1] = a->scales[1] * (hi[1] - lo[1]) / oh;
  ident(sh);
  sh[0][3] = -ow / 2;
  sh[1][3] = -oh / 2;
  mul4(t, r);
  mul4(t, s);
  mul4(t, sh);
  for (int i = 0; i < 16; i++) out[i] = (float)t[i / 4][i % 4];
}

static void transform_tensor(const wrt_model* m, const wrt_op* op) {
  const wrt_tensor *x = &m->t[op->in[0]], *yt = &m->t[op->out];
  const float *xd = t_f32(m, op->in[0]), *mt = t_f32(m, op->in[1]);
  float* y = t_f32(m, op->out);
  int64_t H = x->dims[1], W = x->dims[2], C = x->dims[3], OH = yt->dims[1], OW = yt->dims[2];
  double r0[4] = {mt[0], mt[1], mt[2], mt[3]}, r1[4] = {mt[4], mt[5], mt[6], mt[7]};
  if (!op->a.align_corners) { /* v2: sample pixel centres */
    r0[3] += r0[0] * 0.5 + r0[1] * 0.5 - 0.5;
    r1[3] += r1[0] * 0.5 + r1[1] * 0.5 - 0.5;
  }
  for (int64_t oy = 0; oy < OH; oy++)
    for (int64_t ox = 0; ox < OW; ox++) {
      float* o = y + (oy * OW + ox) * C;
      double tx = r0[0] * (double)ox + r0[1] * (double)oy + r0[3], ty = r1[0] * (double)ox + r1[1] * (double)oy + r1[3];
      if (!(tx >= 0 && tx <= (double)(W - 1) && ty >= 0 && ty <= (double)(H - 1))) {
        rt_zero(o, (size_t)C * sizeof(float));
        continue;
      }
      int64_t x0 = (int64_t)rt_floor(tx), y0 = (int64_t)rt_floor(ty);
      double fx = tx - (double)x0, fy = ty - (double)y0;
      const float* p00 = xd + (y0 * W + x0) * C;
      int right = x0 + 1 < W, down = y0 + 1 < H; /* the neighbour past the last row / column reads 0 */
      for (int64_t c = 0; c < C; c++) {
        double q11 = p00[c], q21 = right ? p00[C + c] : 0, q12 = down ? p00[W * C + c] : 0,
               q22 = right && down ? p00[W * C + C + c] : 0;
        double top = (1 - fx) * q11 + fx * q21, bottom = (1 - fx) * q12 + fx * q22;
        o[c] = (float)(fy * bottom + (1 - fy) * top);
      }
    }
}

int run_mediapipe(wrt_model* m, wrt_op* op) {
  const float* x = t_f32(m, op->in[0]);
  float* y = t_f32(m, op->out);
  switch (op->type) {
    case OP_LANDMARKS_TO_TRANSFORM_MATRIX: landmarks_to_matrix(&op->a, x, y); return WRT_OK;
    case OP_TRANSFORM_TENSOR_BILINEAR: transform_tensor(m, op); return WRT_OK;
    default: { /* TRANSFORM_LANDMARKS */
      const float* mt = t_f32(m, op->in[1]);
      int dims = op->a.dimensions;
      double s = op->a.scale;
      size_t n = (size_t)m->t[op->out].count / (size_t)dims;
      for (size_t i = 0; i < n; i++) {
        const float* p = x + i * (size_t)dims;
        float* q = y + i * (size_t)dims;
        double px = p[0], py = p[1];
        float nx = (float)(mt[0] * px + mt[1] * py + mt[3] * s), ny = (float)(mt[4] * px + mt[5] * py + mt[7] * s);
        if (dims == 3) q[2] = p[2];
        q[0] = nx;
        q[1] = ny;
      }
      return WRT_OK;
    }
  }
}
