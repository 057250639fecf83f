/* piq-mpi.c: quantized ring all-reduce, reduce-scatter and all-gather over MPI
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The ring (docs/mpi.md has the picture): the vector is cut into one chunk per
 * rank, on block boundaries. Reduce-scatter takes size − 1 steps; at step s rank
 * r sends chunk (r − s − 1) mod size to rank r + 1 and receives chunk
 * (r − s − 2) mod size from rank r − 1, which it adds (dequantize ADD) to its own
 * values of that chunk; the partial sum is what it quantizes and sends at the
 * next step. After the last step rank r holds chunk r summed over every rank.
 * All-gather quantizes that chunk once, dequantizes the same bytes into the
 * owner's output, and forwards the received bytes unchanged around the ring, so
 * every rank ends with the same bytes, and only what is forwarded after an
 * addition is ever requantized.
 *
 * Errors never leave a rank waiting: the arguments are compared across ranks
 * before anything is sent; a rank whose codec fails still sends (a message
 * marked failed, which nobody decodes), and every rank learns of any failure in
 * one all-reduce of a flag before it writes the caller's memory.
 */
#include "config.h"

#include <string.h>

#include "piquant-mpi.h"
/* the library's own bf16 conversions (static inline; one rounding rule) */
#include "simd/piq-convert-private.h"

G_DEFINE_QUARK (piq-mpi-error-quark, piq_mpi_error)

/* A message: this header, then the codes, the scales and the zero points of
 * one chunk, each section starting at a multiple of 8 bytes. */
typedef struct {
  double  scale;
  gint64  zero_point;
  gint64  failed;
} MsgHeader;

typedef struct {
  gsize codes, scales, zero_points;     /* section sizes from piq_format_get_sizes */
  gsize scales_at, zero_points_at, total;
} MsgLayout;

struct _PiqMpiReducer {
  MPI_Comm      comm;                   /* our duplicate, MPI_ERRORS_RETURN */
  int           rank, size;
  PiqFormat    *format;
  PiqRecipe    *recipe;                 /* private copy; its seed set per message */
  PiqQuantizer *quantizer;
  guint64       seed;                   /* agreed at creation */
  gsize         align;                  /* chunk boundaries are multiples of this */
  guint64       bytes_sent;

  guint8       *msg[2];                 /* send / receive, swapped by all-gather */
  gsize         msg_cap[2];
  float        *acc, *out, *tmp;        /* one chunk each */
  gsize         acc_cap, out_cap, tmp_cap;
  float        *residual_new;           /* n elements; committed on success only */
  gsize         residual_cap;
};

/* --- small helpers ------------------------------------------------------------ */

static gboolean
mpi_ok (int rc, const char *what, GError **error)
{
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;

  if (rc == MPI_SUCCESS)
    return TRUE;
  if (MPI_Error_string (rc, text, &len) != MPI_SUCCESS)
    g_strlcpy (text, "unknown MPI error", sizeof text);
  g_set_error (error, PIQ_MPI_ERROR, PIQ_MPI_ERROR_MPI, "%s failed: %s", what, text);
  return FALSE;
}

static guint64
fnv1a (guint64 h, const void *data, gsize n)
{
  const guint8 *p = data;

  for (gsize i = 0; i < n; i++)
    h = (h ^ p[i]) * G_GUINT64_CONSTANT (0x100000001b3);
  return h;
}

/* SplitMix64's finalizer: the seed of one message from (seed, rank, step, chunk,
 * phase), so that a run is reproducible and independent of thread counts (the
 * codecs' stochastic rounding is counter-based). Never 0: 0 asks the codec to
 * draw a seed. */
static guint64
mix_seed (guint64 seed, int rank, guint64 step, int chunk, int phase)
{
  guint64 z = seed;
  const guint64 parts[4] = { (guint64) rank, step, (guint64) chunk, (guint64) phase };

  for (int i = 0; i < 4; i++)
    {
      z += G_GUINT64_CONSTANT (0x9e3779b97f4a7c15) + parts[i];
      z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
      z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
      z ^= z >> 31;
    }
  return z ? z : 1;
}

static gsize
dtype_size (PiqDtype dtype)
{
  return dtype == PIQ_DTYPE_F32 ? 4 : 2;
}

/* dst[i] = src[i] (+ residual[i]) in f32 */
static void
load_f32 (float *dst, PiqDtype dtype, gconstpointer src, gsize offset, gsize n,
          const float *residual)
{
  if (n == 0)
    return;    /* the buffers of an empty vector may be NULL */
  if (dtype == PIQ_DTYPE_F32)
    memcpy (dst, (const float *) src + offset, n * sizeof (float));
  else
    for (gsize i = 0; i < n; i++)
      dst[i] = piq_bf16_to_f32 (((const guint16 *) src)[offset + i]);
  if (residual != NULL)
    for (gsize i = 0; i < n; i++)
      dst[i] += residual[offset + i];
}

static void
store (PiqDtype dtype, gpointer dst, gsize offset, const float *src, gsize n)
{
  if (n == 0)
    return;
  if (dtype == PIQ_DTYPE_F32)
    memcpy ((float *) dst + offset, src, n * sizeof (float));
  else
    for (gsize i = 0; i < n; i++)
      ((guint16 *) dst)[offset + i] = piq_f32_to_bf16 (src[i]);
}

static gboolean
overlaps (gconstpointer a, gsize a_bytes, gconstpointer b, gsize b_bytes)
{
  guintptr pa = (guintptr) a, pb = (guintptr) b;

  return a != NULL && b != NULL && a_bytes > 0 && b_bytes > 0
         && pa < pb + b_bytes && pb < pa + a_bytes;
}

/* --- chunks and messages ------------------------------------------------------ */

/**
 * piq_mpi_reducer_get_chunk:
 * @self: a reducer
 * @n_elements: the length of the whole vector
 * @rank: a rank of the reducer's communicator
 * @offset: (out): where @rank's chunk starts
 * @length: (out): its length (0 when there are more ranks than blocks)
 *
 * The chunk that @rank owns in a reduce-scatter (and contributes to an
 * all-gather) of @n_elements: the vector is cut on multiples of the format's
 * block size (1 for per-tensor formats), the blocks shared out in rank order as
 * evenly as they divide, the last chunk ending at @n_elements.
 *
 * Since: 1.0
 */
void
piq_mpi_reducer_get_chunk (PiqMpiReducer *self,
                           gsize          n_elements,
                           int            rank,
                           gsize         *offset,
                           gsize         *length)
{
  g_return_if_fail (self != NULL);
  g_return_if_fail (rank >= 0 && rank < self->size);
  g_return_if_fail (offset != NULL && length != NULL);

  guint64 blocks = n_elements / self->align + (n_elements % self->align != 0);
  /* 128-bit products: blocks · size may pass 2^64 (configure requires __int128) */
  guint64 b0 = (guint64) ((unsigned __int128) blocks * (guint64) rank / (guint64) self->size);
  guint64 b1 = (guint64) ((unsigned __int128) blocks * (guint64) (rank + 1) / (guint64) self->size);
  gsize start = MIN ((gsize) b0 * self->align, n_elements);
  gsize end = MIN ((gsize) b1 * self->align, n_elements);

  *offset = start;
  *length = end - start;
}

static gsize
round8 (gsize n)
{
  return (n + 7) & ~(gsize) 7;
}

static gboolean
msg_layout (PiqMpiReducer *self, gsize length, MsgLayout *l, GError **error)
{
  guint64 shape = length;

  memset (l, 0, sizeof *l);
  if (length == 0)
    return TRUE;     /* an empty chunk sends nothing at all */
  if (!piq_format_get_sizes (self->format, &shape, 1, &l->codes, &l->scales,
                             &l->zero_points, error))
    return FALSE;
  l->scales_at = sizeof (MsgHeader) + round8 (l->codes);
  l->zero_points_at = l->scales_at + round8 (l->scales);
  l->total = l->zero_points_at + l->zero_points;
  return TRUE;
}

/* Quantizes length f32 values into msg; on failure the message is marked failed
 * (its receiver decodes nothing) and FALSE returned with @error set. */
static gboolean
msg_encode (PiqMpiReducer *self, const float *values, gsize length, guint8 *msg,
            const MsgLayout *l, guint64 seed, GError **error)
{
  MsgHeader h = { 1.0, 0, 0 };
  guint64 shape = length;
  gboolean ok;

  if (length == 0)
    return TRUE;
  if (piq_recipe_get_round_mode (self->recipe) == PIQ_ROUND_STOCHASTIC)
    piq_recipe_set_seed (self->recipe, seed);
  ok = piq_quantizer_quantize_raw (self->quantizer, self->format, self->recipe,
                                   PIQ_DTYPE_F32, values, &shape, 1,
                                   msg + sizeof h, l->codes,
                                   l->scales ? msg + l->scales_at : NULL, l->scales,
                                   l->zero_points ? msg + l->zero_points_at : NULL,
                                   l->zero_points, &h.scale, &h.zero_point, error);
  h.failed = !ok;
  memcpy (msg, &h, sizeof h);
  return ok;
}

/* Decodes msg into length values of dtype at dst with @op. A failed message
 * decodes to nothing: the flag all-reduce that follows reports it. */
static gboolean
msg_decode (PiqMpiReducer *self, const guint8 *msg, const MsgLayout *l, gsize length,
            PiqDtype dtype, gpointer dst, PiqReduceOp op, GError **error)
{
  MsgHeader h;
  guint64 shape = length;

  if (length == 0)
    return TRUE;
  memcpy (&h, msg, sizeof h);
  if (h.failed)
    return TRUE;
  return piq_quantizer_dequantize_raw (self->quantizer, self->format, h.scale, h.zero_point,
                                       msg + sizeof h, l->codes, &shape, 1,
                                       l->scales ? msg + l->scales_at : NULL, l->scales,
                                       l->zero_points ? msg + l->zero_points_at : NULL,
                                       l->zero_points, dtype, dst,
                                       length * dtype_size (dtype), op, error);
}

/* Sends to the right neighbour and receives from the left, in parts that fit an
 * int count. */
static gboolean
ring_exchange (PiqMpiReducer *self, const guint8 *send, gsize send_bytes,
               guint8 *recv, gsize recv_bytes, GError **error)
{
  const gsize part = (gsize) 1 << 30;
  int right = (self->rank + 1) % self->size;
  int left = (self->rank + self->size - 1) % self->size;
  gsize done_s = 0, done_r = 0;

  do
    {
      int ns = (int) MIN (part, send_bytes - done_s);
      int nr = (int) MIN (part, recv_bytes - done_r);
      int rc = MPI_Sendrecv (send + done_s, ns, MPI_BYTE, right, 0,
                             recv + done_r, nr, MPI_BYTE, left, 0,
                             self->comm, MPI_STATUS_IGNORE);
      if (!mpi_ok (rc, "MPI_Sendrecv", error))
        return FALSE;
      done_s += (gsize) ns;
      done_r += (gsize) nr;
    }
  while (done_s < send_bytes || done_r < recv_bytes);
  self->bytes_sent += send_bytes;
  return TRUE;
}

/* Every rank learns whether any rank failed; the failing ranks keep their own
 * error, the others get one that names the lowest failing rank. */
static gboolean
agree_ok (PiqMpiReducer *self, gboolean ok, const char *phase, GError **error)
{
  int first_bad = ok ? self->size : self->rank, lowest;
  int rc = MPI_Allreduce (&first_bad, &lowest, 1, MPI_INT, MPI_MIN, self->comm);

  if (!mpi_ok (rc, "MPI_Allreduce", error))
    return FALSE;
  if (lowest == self->size)
    return TRUE;
  if (ok)
    g_set_error (error, PIQ_MPI_ERROR, PIQ_MPI_ERROR_REMOTE,
                 "%s: rank %d failed (its own error says why); nothing was written",
                 phase, lowest);
  return FALSE;
}

/* Compares values across ranks: equal everywhere, or every rank fails. A rank
 * whose own arguments were refused (local_ok FALSE, error set) makes them all
 * fail. */
static gboolean
agree_args (PiqMpiReducer *self, const gint64 *values, int n, gboolean local_ok,
            const char *what, GError **error)
{
  gint64 send[10], recv[10];
  int rc;

  g_assert (n <= 4);
  for (int i = 0; i < n; i++)
    {
      send[i] = values[i];
      send[n + i] = -values[i];        /* MIN of −v is −MAX of v */
    }
  send[2 * n] = local_ok ? 0 : -1;     /* MIN: −1 when any rank refused */
  rc = MPI_Allreduce (send, recv, 2 * n + 1, MPI_INT64_T, MPI_MIN, self->comm);
  if (!mpi_ok (rc, "MPI_Allreduce", error))
    return FALSE;
  if (!local_ok)
    return FALSE;
  if (recv[2 * n] != 0)
    {
      g_set_error (error, PIQ_MPI_ERROR, PIQ_MPI_ERROR_REMOTE,
                   "%s: another rank refused its arguments (its own error says why); "
                   "nothing was written", what);
      return FALSE;
    }
  for (int i = 0; i < n; i++)
    if (recv[i] != -recv[n + i])
      {
        g_set_error (error, PIQ_MPI_ERROR, PIQ_MPI_ERROR_MISMATCH,
                     "%s: the ranks passed different arguments (%s); nothing was written",
                     what, i == 0 ? "lengths" : i == 1 ? "dtypes" : "operations");
        return FALSE;
      }
  return TRUE;
}

static gboolean
grow (gpointer *p, gsize *cap, gsize want, gsize elem, GError **error)
{
  gpointer q;

  want = MAX (want, 1);      /* never NULL: pointer arithmetic on it is defined */
  if (want <= *cap)
    return TRUE;
  if (want > G_MAXSIZE / elem || (q = g_try_malloc0 (want * elem)) == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY,
                   "cannot allocate %" G_GSIZE_FORMAT " bytes of scratch", want * elem);
      return FALSE;
    }
  g_free (*p);
  *p = q;
  *cap = want;
  return TRUE;
}

/* Scratch for a vector of n elements: two messages and three chunks of the
 * largest chunk, and a residual of n when error feedback is on. Every chunk's
 * layout is computed here, the same on every rank, so that no rank can refuse a
 * length once the ring has started. */
static gboolean
reserve (PiqMpiReducer *self, gsize n, gboolean feedback, GError **error)
{
  gsize longest = 0, longest_msg = 0, off, len;
  MsgLayout l;

  for (int r = 0; r < self->size; r++)
    {
      piq_mpi_reducer_get_chunk (self, n, r, &off, &len);
      if (!msg_layout (self, len, &l, error))
        return FALSE;
      longest = MAX (longest, len);
      longest_msg = MAX (longest_msg, l.total);
    }
  return grow ((gpointer *) &self->msg[0], &self->msg_cap[0], longest_msg, 1, error)
         && grow ((gpointer *) &self->msg[1], &self->msg_cap[1], longest_msg, 1, error)
         && grow ((gpointer *) &self->acc, &self->acc_cap, longest, sizeof (float), error)
         && grow ((gpointer *) &self->out, &self->out_cap, longest, sizeof (float), error)
         && grow ((gpointer *) &self->tmp, &self->tmp_cap, longest, sizeof (float), error)
         && (!feedback || grow ((gpointer *) &self->residual_new, &self->residual_cap, n,
                                sizeof (float), error));
}

/* --- the two halves ----------------------------------------------------------- */

/* What quantizing values into msg dropped: residual_new[chunk] = values − decoded. */
static gboolean
keep_residual (PiqMpiReducer *self, const float *values, gsize offset, gsize length,
               const guint8 *msg, const MsgLayout *l, GError **error)
{
  if (!msg_decode (self, msg, l, length, PIQ_DTYPE_F32, self->tmp, PIQ_REDUCE_SET, error))
    return FALSE;
  for (gsize i = 0; i < length; i++)
    self->residual_new[offset + i] = values[i] - self->tmp[i];
  return TRUE;
}

/* Reduce-scatter into self->out (this rank's chunk, f32). Writes nothing of the
 * caller's. */
static gboolean
reduce_scatter_core (PiqMpiReducer *self, PiqDtype dtype, gconstpointer src, gsize n,
                     const float *residual, guint64 step, GError **error)
{
  const int p = self->size, r = self->rank;
  gsize off, len, own_off, own_len;
  gboolean ok = TRUE;
  GError *local = NULL;

  piq_mpi_reducer_get_chunk (self, n, r, &own_off, &own_len);
  if (residual != NULL && n > 0)
    memset (self->residual_new, 0, n * sizeof (float));
  if (p == 1)
    {
      load_f32 (self->out, dtype, src, own_off, own_len, residual);
      return TRUE;
    }
  /* The chunk sent at step 0 is this rank's own values. */
  int c = (r + p - 1) % p;
  piq_mpi_reducer_get_chunk (self, n, c, &off, &len);
  load_f32 (self->acc, dtype, src, off, len, residual);
  for (int s = 0; s < p - 1; s++)
    {
      int c_in = (r + 2 * p - s - 2) % p;
      gsize in_off, in_len;
      MsgLayout ls, lr;
      float *target;

      piq_mpi_reducer_get_chunk (self, n, c, &off, &len);
      piq_mpi_reducer_get_chunk (self, n, c_in, &in_off, &in_len);
      if (!msg_layout (self, len, &ls, error) || !msg_layout (self, in_len, &lr, error))
        g_return_val_if_reached (FALSE);     /* reserve() computed them already */
      if (ok)
        {
          ok = msg_encode (self, self->acc, len, self->msg[0], &ls,
                           mix_seed (self->seed, r, step, c, 0), &local);
          if (ok && residual != NULL)
            ok = keep_residual (self, self->acc, off, len, self->msg[0], &ls, &local);
        }
      if (!ok && len > 0)
        {
          /* after an earlier failure nothing was encoded: mark what goes out */
          gint64 failed = 1;
          memcpy (self->msg[0] + G_STRUCT_OFFSET (MsgHeader, failed), &failed, sizeof failed);
        }
      if (!ring_exchange (self, self->msg[0], ls.total, self->msg[1], lr.total, error))
        {
          g_clear_error (&local);
          return FALSE;
        }
      /* The received partial sum joins this rank's values of that chunk; the
       * last one received is this rank's own chunk, complete. */
      target = c_in == r ? self->out : self->acc;
      load_f32 (target, dtype, src, in_off, in_len, residual);
      if (ok)
        ok = msg_decode (self, self->msg[1], &lr, in_len, PIQ_DTYPE_F32, target,
                         PIQ_REDUCE_ADD, &local);
      c = c_in;
    }
  if (!agree_ok (self, ok, "reduce-scatter", ok ? error : NULL))
    {
      if (!ok)
        g_propagate_error (error, local);
      return FALSE;
    }
  return TRUE;
}

/* All-gather of self->out (this rank's chunk, f32) into dst. The only write to
 * the caller's memory before a failure could be known is none: the own chunk is
 * encoded and every rank agrees before anything is decoded into dst. */
static gboolean
allgather_core (PiqMpiReducer *self, PiqDtype dtype, gpointer dst, gsize n,
                gboolean feedback, guint64 step, GError **error)
{
  const int p = self->size, r = self->rank;
  gsize off, len;
  MsgLayout l;
  gboolean ok;
  GError *local = NULL;

  piq_mpi_reducer_get_chunk (self, n, r, &off, &len);
  if (p == 1)
    {
      /* Nothing travels, so nothing is quantized; a bf16 result still rounds. */
      store (dtype, dst, off, self->out, len);
      if (feedback)
        for (gsize i = 0; i < len; i++)
          self->residual_new[off + i] = dtype == PIQ_DTYPE_F32 ? 0.f
              : self->out[i] - piq_bf16_to_f32 (((guint16 *) dst)[off + i]);
      return TRUE;
    }
  if (!msg_layout (self, len, &l, error))
    g_return_val_if_reached (FALSE);         /* reserve() computed it already */
  ok = msg_encode (self, self->out, len, self->msg[0], &l,
                   mix_seed (self->seed, r, step, r, 1), &local);
  if (!agree_ok (self, ok, "all-gather", ok ? error : NULL))
    {
      if (!ok)
        g_propagate_error (error, local);
      return FALSE;
    }
  /* The owner decodes the bytes it sends, so every rank holds the same values. */
  if (!msg_decode (self, self->msg[0], &l, len, dtype,
                   (guint8 *) dst + off * dtype_size (dtype), PIQ_REDUCE_SET, error))
    return FALSE;
  if (feedback)
    for (gsize i = 0; i < len; i++)
      self->residual_new[off + i] = self->out[i]
          - (dtype == PIQ_DTYPE_F32 ? ((float *) dst)[off + i]
                                    : piq_bf16_to_f32 (((guint16 *) dst)[off + i]));

  int cur = 0;
  for (int s = 0; s < p - 1; s++)
    {
      int c_out = (r + p - s) % p, c_in = (r + 2 * p - s - 1) % p;
      gsize out_off, out_len, in_off, in_len;
      MsgLayout lo, li;

      piq_mpi_reducer_get_chunk (self, n, c_out, &out_off, &out_len);
      piq_mpi_reducer_get_chunk (self, n, c_in, &in_off, &in_len);
      if (!msg_layout (self, out_len, &lo, error) || !msg_layout (self, in_len, &li, error))
        g_return_val_if_reached (FALSE);     /* reserve() computed them already */
      if (!ring_exchange (self, self->msg[cur], lo.total, self->msg[1 - cur], li.total, error))
        return FALSE;
      cur = 1 - cur;     /* what came in goes out next, unchanged */
      if (!msg_decode (self, self->msg[cur], &li, in_len, dtype,
                       (guint8 *) dst + in_off * dtype_size (dtype), PIQ_REDUCE_SET, error))
        return FALSE;
    }
  return TRUE;
}

/* --- public API --------------------------------------------------------------- */

static gboolean
check_call (PiqDtype dtype, gsize n, GError **error)
{
  if (dtype != PIQ_DTYPE_F32 && dtype != PIQ_DTYPE_BF16)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "quantized collectives take f32 or bf16 vectors");
      return FALSE;
    }
  if (n > G_MAXSIZE / sizeof (float))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW, "%" G_GSIZE_FORMAT
                   " elements are more than this machine can address", n);
      return FALSE;
    }
  return TRUE;
}

static void
commit_residual (PiqMpiReducer *self, float *residual, gsize n)
{
  if (residual != NULL && n > 0)
    memcpy (residual, self->residual_new, n * sizeof (float));
}

typedef enum {
  CALL_ALLREDUCE,
  CALL_REDUCE_SCATTER,
  CALL_ALLGATHER,
} CallKind;

/* What every call checks before anything is sent, then the ranks' agreement on
 * it: the dtype and length; the buffers (vec: the whole vector, chunk: this
 * rank's chunk, a separate buffer except for all-reduce, residual) not
 * overlapping; the scratch. Every rank returns FALSE when any rank refused,
 * the refusing ones with their own error. */
static gboolean
begin_call (PiqMpiReducer *self,
            CallKind       kind,
            PiqDtype       dtype,
            gsize          n,
            gconstpointer  vec,
            gconstpointer  chunk,
            const float   *residual,
            GError       **error)
{
  static const char *const names[] = { "all-reduce", "reduce-scatter", "all-gather" };
  gint64 args[3] = { (gint64) MIN (n, (gsize) G_MAXINT64), dtype, kind };
  GError *local = NULL;
  gboolean ok = check_call (dtype, n, &local);

  if (ok)
    {
      gsize es = dtype_size (dtype), rb = n * sizeof (float), off, len;

      piq_mpi_reducer_get_chunk (self, n, self->rank, &off, &len);
      if (kind != CALL_ALLREDUCE && chunk == NULL && len > 0)
        {
          g_set_error_literal (&local, PIQ_ERROR, PIQ_ERROR_SIZE,
                               "this rank's chunk is not empty but its buffer is NULL");
          ok = FALSE;
        }
      else if (overlaps (vec, n * es, residual, rb)
               || (kind != CALL_ALLREDUCE && (overlaps (chunk, len * es, vec, n * es)
                                              || overlaps (chunk, len * es, residual, rb))))
        {
          g_set_error_literal (&local, PIQ_ERROR, PIQ_ERROR_OVERLAP,
                               "the vector, the chunk and the residual must not overlap");
          ok = FALSE;
        }
    }
  ok = ok && reserve (self, n, residual != NULL, &local);
  if (!agree_args (self, args, 3, ok, names[kind], ok ? error : NULL))
    {
      if (!ok)
        g_propagate_error (error, local);
      return FALSE;
    }
  return TRUE;
}

/**
 * piq_mpi_reducer_allreduce:
 * @self: a reducer
 * @dtype: %PIQ_DTYPE_F32 or %PIQ_DTYPE_BF16
 * @data: (inout): the vector, replaced by its sum over the ranks
 * @n_elements: its length, the same on every rank
 * @residual: (nullable) (inout): error feedback: @n_elements floats, added to
 *   @data before it is sent, then overwritten with what this rank's
 *   quantization dropped (zero where it quantized nothing); %NULL for none
 * @step: the step number, mixed into the stochastic-rounding seeds
 * @error: return location for a #GError
 *
 * Sums @data over the ranks, sending quantized chunks around a ring:
 * reduce-scatter (each partial sum quantized once by the rank that forwards
 * it, dequantized with %PIQ_REDUCE_ADD into an f32 accumulator by the rank that
 * receives it), then all-gather (each complete chunk quantized once by its
 * owner and forwarded unchanged). Every rank ends with the same bytes. With
 * error feedback, the residuals of all ranks add up to the exact sum minus
 * the result (up to f32 rounding), whatever the format.
 *
 * Collective over the reducer's communicator. On failure, on every rank,
 * nothing was written to @data or @residual.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_mpi_reducer_allreduce (PiqMpiReducer *self,
                           PiqDtype       dtype,
                           gpointer       data,
                           gsize          n_elements,
                           float         *residual,
                           guint64        step,
                           GError       **error)
{
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (data != NULL || n_elements == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!begin_call (self, CALL_ALLREDUCE, dtype, n_elements, data, NULL, residual, error))
    return FALSE;
  if (!reduce_scatter_core (self, dtype, data, n_elements, residual, step, error)
      || !allgather_core (self, dtype, data, n_elements, residual != NULL, step, error))
    return FALSE;
  commit_residual (self, residual, n_elements);
  return TRUE;
}

/**
 * piq_mpi_reducer_reduce_scatter:
 * @self: a reducer
 * @dtype: %PIQ_DTYPE_F32 or %PIQ_DTYPE_BF16, of @src and @dst
 * @src: the vector, @n_elements long
 * @n_elements: its length, the same on every rank
 * @dst: (out): this rank's chunk of the sum (see
 *   piq_mpi_reducer_get_chunk()); must not overlap @src
 * @residual: (nullable) (inout): error feedback as in
 *   piq_mpi_reducer_allreduce(), @n_elements floats
 * @step: the step number, mixed into the stochastic-rounding seeds
 * @error: return location for a #GError
 *
 * The first half of piq_mpi_reducer_allreduce(): rank r receives chunk r of
 * the sum, accumulated in f32 (and rounded once to bf16 for a bf16 @dst).
 *
 * Returns: %TRUE on success; on failure nothing was written, on any rank
 *
 * Since: 1.0
 */
gboolean
piq_mpi_reducer_reduce_scatter (PiqMpiReducer *self,
                                PiqDtype       dtype,
                                gconstpointer  src,
                                gsize          n_elements,
                                gpointer       dst,
                                float         *residual,
                                guint64        step,
                                GError       **error)
{
  gsize off = 0, len = 0;

  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (src != NULL || n_elements == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!begin_call (self, CALL_REDUCE_SCATTER, dtype, n_elements, src, dst, residual, error))
    return FALSE;
  piq_mpi_reducer_get_chunk (self, n_elements, self->rank, &off, &len);
  if (!reduce_scatter_core (self, dtype, src, n_elements, residual, step, error))
    return FALSE;
  store (dtype, dst, 0, self->out, len);
  commit_residual (self, residual, n_elements);
  return TRUE;
}

/**
 * piq_mpi_reducer_allgather:
 * @self: a reducer
 * @dtype: %PIQ_DTYPE_F32 or %PIQ_DTYPE_BF16, of @src and @dst
 * @src: this rank's chunk of the vector (see piq_mpi_reducer_get_chunk())
 * @n_elements: the length of the whole vector, the same on every rank
 * @dst: (out): the whole vector, @n_elements long; must not overlap @src
 * @residual: (nullable) (inout): error feedback, @n_elements floats of which
 *   this rank's chunk is used and the rest set to 0
 * @step: the step number, mixed into the stochastic-rounding seeds
 * @error: return location for a #GError
 *
 * The second half of piq_mpi_reducer_allreduce(): each rank quantizes its
 * chunk once and every rank decodes every chunk into @dst; all ranks end with
 * the same bytes.
 *
 * Returns: %TRUE on success; on failure nothing was written, on any rank
 *
 * Since: 1.0
 */
gboolean
piq_mpi_reducer_allgather (PiqMpiReducer *self,
                           PiqDtype       dtype,
                           gconstpointer  src,
                           gsize          n_elements,
                           gpointer       dst,
                           float         *residual,
                           guint64        step,
                           GError       **error)
{
  gsize off = 0, len = 0;

  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (dst != NULL || n_elements == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!begin_call (self, CALL_ALLGATHER, dtype, n_elements, dst, src, residual, error))
    return FALSE;
  piq_mpi_reducer_get_chunk (self, n_elements, self->rank, &off, &len);
  if (residual != NULL && n_elements > 0)
    memset (self->residual_new, 0, n_elements * sizeof (float));
  /* src holds this rank's chunk only: load it as the chunk at offset 0. */
  load_f32 (self->out, dtype, src, 0, len, residual != NULL ? residual + off : NULL);
  if (!allgather_core (self, dtype, dst, n_elements, residual != NULL, step, error))
    return FALSE;
  commit_residual (self, residual, n_elements);
  return TRUE;
}

/* A fingerprint of the format and recipe, for the creation-time agreement. */
static guint64
config_hash (PiqFormat *format, PiqRecipe *recipe)
{
  g_autofree char *f = piq_format_to_string (format);
  guint64 h = fnv1a (G_GUINT64_CONSTANT (0xcbf29ce484222325), f, strlen (f));
  gint64 r[7] = {
    piq_recipe_get_scale_rule (recipe), piq_recipe_get_include_zero (recipe),
    piq_recipe_get_round_mode (recipe), (gint64) piq_recipe_get_seed (recipe),
    piq_recipe_has_scale (recipe), piq_recipe_has_zero_point (recipe),
    piq_recipe_has_zero_point (recipe) ? piq_recipe_get_zero_point (recipe) : 0,
  };
  double scale = piq_recipe_has_scale (recipe) ? piq_recipe_get_scale (recipe) : 0;

  h = fnv1a (h, r, sizeof r);
  return fnv1a (h, &scale, sizeof scale);
}

/**
 * piq_mpi_reducer_new:
 * @comm: the communicator; duplicated, so the caller may free its own
 * @format: the format every message is sent in: any per-tensor or per-block
 *   format (not per channel: the vector has no channels)
 * @recipe: (nullable): how scales are chosen and values rounded; %NULL for the
 *   default recipe. A stochastic recipe's seed, mixed with the rank, the step and
 *   the chunk, seeds each message; a seed of 0 is drawn once by rank 0 and shared
 *   (piq_mpi_reducer_get_seed() tells it)
 * @error: return location for a #GError
 *
 * Creates a reducer. Collective over @comm: every rank must pass an equal
 * format and recipe, or every rank fails with %PIQ_MPI_ERROR_MISMATCH.
 *
 * Returns: (transfer full) (nullable): the reducer, or %NULL on error
 *
 * Since: 1.0
 */
PiqMpiReducer *
piq_mpi_reducer_new (MPI_Comm    comm,
                     PiqFormat  *format,
                     PiqRecipe  *recipe,
                     GError    **error)
{
  g_autoptr (PiqMpiReducer) self = NULL;
  GError *local = NULL;
  gboolean ok = TRUE;
  gint64 args[1];
  int rc;

  g_return_val_if_fail (PIQ_IS_FORMAT (format), NULL);
  g_return_val_if_fail (recipe == NULL || PIQ_IS_RECIPE (recipe), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self = g_new0 (PiqMpiReducer, 1);
  self->comm = MPI_COMM_NULL;
  rc = MPI_Comm_dup (comm, &self->comm);
  if (!mpi_ok (rc, "MPI_Comm_dup", error))
    {
      self->comm = MPI_COMM_NULL;
      return NULL;
    }
  if (!mpi_ok (MPI_Comm_set_errhandler (self->comm, MPI_ERRORS_RETURN),
               "MPI_Comm_set_errhandler", error)
      || !mpi_ok (MPI_Comm_rank (self->comm, &self->rank), "MPI_Comm_rank", error)
      || !mpi_ok (MPI_Comm_size (self->comm, &self->size), "MPI_Comm_size", error))
    return NULL;
  self->format = g_object_ref (format);
  self->recipe = recipe ? piq_recipe_copy (recipe) : piq_recipe_new ();
  self->quantizer = g_object_ref (piq_quantizer_get_default ());
  self->align = MAX (piq_format_get_block_size (format), 1);

  if (!piq_format_validate (format, &local))
    ok = FALSE;
  else if (piq_format_get_granularity (format) == PIQ_GRANULARITY_CHANNEL)
    {
      g_set_error_literal (&local, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                           "a per-channel format cannot carry a vector: use per tensor or per block");
      ok = FALSE;
    }
  args[0] = (gint64) (config_hash (format, self->recipe) >> 1);
  if (!agree_args (self, args, 1, ok, "creating a reducer", ok ? error : NULL))
    {
      if (!ok)
        {
          g_propagate_error (error, local);
        }
      else if (error != NULL && *error != NULL && (*error)->code == PIQ_MPI_ERROR_MISMATCH)
        {
          g_clear_error (error);
          g_set_error_literal (error, PIQ_MPI_ERROR, PIQ_MPI_ERROR_MISMATCH,
                               "the ranks passed different formats or recipes");
        }
      return NULL;
    }
  self->seed = piq_recipe_get_seed (self->recipe);
  if (self->seed == 0)
    {
      guint64 drawn = ((guint64) g_random_int () << 32) | g_random_int ();
      rc = MPI_Bcast (&drawn, 1, MPI_UINT64_T, 0, self->comm);
      if (!mpi_ok (rc, "MPI_Bcast", error))
        return NULL;
      self->seed = drawn;
    }
  return g_steal_pointer (&self);
}

/**
 * piq_mpi_reducer_free:
 * @self: (nullable): a reducer
 *
 * Frees the reducer and its duplicate communicator. Collective, as
 * `MPI_Comm_free` is; call it before `MPI_Finalize`.
 *
 * Since: 1.0
 */
void
piq_mpi_reducer_free (PiqMpiReducer *self)
{
  if (self == NULL)
    return;
  if (self->comm != MPI_COMM_NULL)
    MPI_Comm_free (&self->comm);
  g_clear_object (&self->format);
  g_clear_object (&self->recipe);
  g_clear_object (&self->quantizer);
  g_free (self->msg[0]);
  g_free (self->msg[1]);
  g_free (self->acc);
  g_free (self->out);
  g_free (self->tmp);
  g_free (self->residual_new);
  g_free (self);
}

/**
 * piq_mpi_reducer_set_quantizer:
 * @self: a reducer
 * @quantizer: the quantizer whose threads and SIMD level the codecs use
 *
 * Sets the quantizer (by default piq_quantizer_get_default()). The bytes sent
 * do not depend on its thread count or SIMD level.
 *
 * Since: 1.0
 */
void
piq_mpi_reducer_set_quantizer (PiqMpiReducer *self,
                               PiqQuantizer  *quantizer)
{
  g_return_if_fail (self != NULL);
  g_return_if_fail (PIQ_IS_QUANTIZER (quantizer));

  g_set_object (&self->quantizer, quantizer);
}

/**
 * piq_mpi_reducer_get_seed:
 * @self: a reducer
 *
 * Returns: the seed the ranks agreed on (the recipe's, or the one rank 0 drew)
 *
 * Since: 1.0
 */
guint64
piq_mpi_reducer_get_seed (PiqMpiReducer *self)
{
  g_return_val_if_fail (self != NULL, 0);
  return self->seed;
}

/**
 * piq_mpi_reducer_get_bytes_sent:
 * @self: a reducer
 *
 * Returns: the bytes this rank has sent through the reducer (messages only,
 *   not the few bytes each call spends agreeing on its arguments)
 *
 * Since: 1.0
 */
guint64
piq_mpi_reducer_get_bytes_sent (PiqMpiReducer *self)
{
  g_return_val_if_fail (self != NULL, 0);
  return self->bytes_sent;
}
