// Fused attention, tiled by query blocks (see kernels/attention.h).

#include "parallax/kernels/attention.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "parallax/core/parallel.h"
#include "parallax/kernels/gemm.h"
#include "parallax/kernels/softmax.h"

namespace px::kernels {

namespace {

// Queries per block: the scratch is a few [block, Tk] matrices (at Tk 8192 and float32, 2 MB
// each), and a block of 64 rows keeps the GEMMs large enough for OpenBLAS's kernels.
constexpr int64_t kQueryBlock = 64;

MatrixLayout row_major(int64_t rows, int64_t cols, int64_t ld) { return {rows, cols, ld, 1}; }
// The transpose of a row-major rows x cols matrix with leading dim ld, read in place.
MatrixLayout transposed(int64_t rows, int64_t cols, int64_t ld) { return {cols, rows, 1, ld}; }

// The keys the block of queries [i0, i1) sees: all of them, or under a causal mask up to the last
// query's own position.
int64_t keys_seen(const AttentionShape& s, int64_t i1) {
  return s.causal ? std::clamp<int64_t>(s.first_query + i1, 0, s.tk) : s.tk;
}

}  // namespace

int64_t attention_scores(const AttentionShape& s) {
  int64_t scores = 0;
  for (int64_t i0 = 0; i0 < s.tq; i0 += kQueryBlock) {
    const int64_t rows = std::min(kQueryBlock, s.tq - i0);
    scores += rows * keys_seen(s, i0 + rows);
  }
  return scores;
}

namespace {

// Q_blk · scale into `scaled` [rows, d]: the scale rides on the block's queries (rows · d products)
// rather than on its scores (rows · keys).
template <class T>
void scale_queries(const T* q_blk, int64_t rows, const AttentionShape& s, T* scaled) {
  const T scale = static_cast<T>(s.scale);
  for (int64_t i = 0; i < rows * s.d; ++i) scaled[i] = q_blk[i] * scale;
}

// P [rows, keys] = softmax(Q_scaled K[:keys]ᵀ), the keys after each query's own position hidden
// under a causal mask (every query sees at least key 0); `scores` is scratch.
template <class T>
void block_probabilities(const T* q_scaled, const T* k, int64_t rows, int64_t i0, int64_t keys, const AttentionShape& s,
                         T* scores, T* probs) {
  gemm(q_scaled, row_major(rows, s.d, s.d), k, transposed(keys, s.d, s.d), scores, keys);
  if (s.causal) {
    const T hidden = -std::numeric_limits<T>::infinity();
    for (int64_t r = 0; r < rows; ++r) {
      // Keys after the query's own position are hidden (a causal block's first rows see fewer).
      const int64_t seen = std::clamp<int64_t>(s.first_query + i0 + r + 1, 0, keys);
      std::fill(scores + r * keys + seen, scores + (r + 1) * keys, hidden);
    }
  }
  softmax(scores, probs, rows, keys, 1);
}

// Calls visit(b, i0, rows, keys) for every batch entry b and block of queries [i0, i0 + rows)
// that sees `keys` > 0 keys, and unseen(b, i0, rows) for a block that sees none. Batch entries
// run in parallel (core/parallel.h), each on one thread with its own scratch (make_scratch()),
// its blocks in order: a thread's sums are the same as without threads.
template <class MakeScratch, class Visit, class Unseen>
void for_each_block(const AttentionShape& s, MakeScratch&& make_scratch, Visit&& visit, Unseen&& unseen) {
  parallel_for(s.batch, 1, [&](int64_t b_begin, int64_t b_end) {
    auto scratch = make_scratch();
    for (int64_t b = b_begin; b < b_end; ++b) {
      for (int64_t i0 = 0; i0 < s.tq; i0 += kQueryBlock) {
        const int64_t rows = std::min(kQueryBlock, s.tq - i0);
        const int64_t keys = keys_seen(s, i0 + rows);
        if (keys == 0) {
          unseen(b, i0, rows);
        } else {
          visit(scratch, b, i0, rows, keys);
        }
      }
    }
  });
}

// Per-thread scratch: `count` [block, Tk] matrices and one [block, d] block of scaled queries,
// left uninitialized (every use writes before it reads).
template <class T>
struct BlockScratch {
  BlockScratch(const AttentionShape& s, int count)
      : matrix_size(std::min(kQueryBlock, s.tq) * s.tk),
        buffer(new T[static_cast<size_t>(count * matrix_size + std::min(kQueryBlock, s.tq) * s.d)]),
        count(count) {}
  T* matrix(int i) { return buffer.get() + i * matrix_size; }
  T* queries() { return buffer.get() + count * matrix_size; }

  int64_t matrix_size;
  std::unique_ptr<T[]> buffer;
  int count;
};

template <class T>
void forward(const T* q, const T* k, const T* v, T* out, const AttentionShape& s) {
  for_each_block(
      s, [&] { return BlockScratch<T>(s, 2); },
      [&](BlockScratch<T>& scratch, int64_t b, int64_t i0, int64_t rows, int64_t keys) {
        T* scores = scratch.matrix(0);
        T* probs = scratch.matrix(1);
        T* q_scaled = scratch.queries();
        scale_queries(q + (b * s.tq + i0) * s.d, rows, s, q_scaled);
        block_probabilities(q_scaled, k + b * s.tk * s.d, rows, i0, keys, s, scores, probs);
        gemm(probs, row_major(rows, keys, keys), v + b * s.tk * s.dv, row_major(keys, s.dv, s.dv),
             out + (b * s.tq + i0) * s.dv, s.dv);
      },
      [&](int64_t b, int64_t i0, int64_t rows) {
        std::fill(out + (b * s.tq + i0) * s.dv, out + (b * s.tq + i0 + rows) * s.dv, T(0));
      });
}

// With S = scale · Q Kᵀ, the scale is carried by Q_scaled: dS' = P ∘ (dP − rowsum(P ∘ dP)) (the
// softmax backward) gives dk += dS'ᵀ Q_scaled and dq = scale · dS' K.
template <class T>
void backward(const T* q, const T* k, const T* v, const T* g, T* dq, T* dk, T* dv, const AttentionShape& s) {
  std::fill(dk, dk + s.batch * s.tk * s.d, T(0));
  std::fill(dv, dv + s.batch * s.tk * s.dv, T(0));
  const T scale = static_cast<T>(s.scale);
  for_each_block(
      s, [&] { return BlockScratch<T>(s, 3); },
      [&](BlockScratch<T>& scratch, int64_t b, int64_t i0, int64_t rows, int64_t keys) {
        T* scores = scratch.matrix(0);
        T* probs = scratch.matrix(1);
        T* dprobs = scratch.matrix(2);
        T* q_scaled = scratch.queries();
        const T* g_blk = g + (b * s.tq + i0) * s.dv;
        const T* kb = k + b * s.tk * s.d;
        const T* vb = v + b * s.tk * s.dv;
        T* dq_blk = dq + (b * s.tq + i0) * s.d;
        T* dkb = dk + b * s.tk * s.d;
        T* dvb = dv + b * s.tk * s.dv;
        scale_queries(q + (b * s.tq + i0) * s.d, rows, s, q_scaled);
        block_probabilities(q_scaled, kb, rows, i0, keys, s, scores, probs);
        // dv[:keys] += Pᵀ g_blk; dP = g_blk v[:keys]ᵀ.
        gemm(probs, transposed(rows, keys, keys), g_blk, row_major(rows, s.dv, s.dv), dvb, s.dv, T(1));
        gemm(g_blk, row_major(rows, s.dv, s.dv), vb, transposed(keys, s.dv, s.dv), dprobs, keys);
        // dS' into the scores' scratch.
        softmax_backward_rows(dprobs, probs, scores, rows, keys, 1, 0, rows);
        // dq_blk = scale · dS' k[:keys]; dk[:keys] += dS'ᵀ Q_scaled.
        gemm(scores, row_major(rows, keys, keys), kb, row_major(keys, s.d, s.d), dq_blk, s.d);
        for (int64_t i = 0; i < rows * s.d; ++i) dq_blk[i] *= scale;
        gemm(scores, transposed(rows, keys, keys), q_scaled, row_major(rows, s.d, s.d), dkb, s.d, T(1));
      },
      [&](int64_t b, int64_t i0, int64_t rows) {
        std::fill(dq + (b * s.tq + i0) * s.d, dq + (b * s.tq + i0 + rows) * s.d, T(0));
      });
}

}  // namespace

template <class T>
void attention_forward(const T* q, const T* k, const T* v, T* out, const AttentionShape& shape) {
  forward(q, k, v, out, shape);
}

template <class T>
void attention_backward(const T* q, const T* k, const T* v, const T* g, T* dq, T* dk, T* dv,
                        const AttentionShape& shape) {
  backward(q, k, v, g, dq, dk, dv, shape);
}

template void attention_forward<float>(const float*, const float*, const float*, float*, const AttentionShape&);
template void attention_forward<double>(const double*, const double*, const double*, double*, const AttentionShape&);
template void attention_backward<float>(const float*, const float*, const float*, const float*, float*, float*, float*,
                                        const AttentionShape&);
template void attention_backward<double>(const double*, const double*, const double*, const double*, double*, double*,
                                         double*, const AttentionShape&);

}  // namespace px::kernels
