#pragma once
// The backward pass of the model (model.hpp), step by step in the articles' words read in
// reverse, from the traces the forward pass kept:
//   loss → logits → unembedding → (LN_f) → each layer from the last:
//   the block (second residual, LayerNorm, feed-forward, first residual) →
//   dOutput → dConcat → per head: dV and dWeights → dScores (softmax Jacobian, row by row)
//   → dQ, dK (un-rotated when RoPE; ALiBi's bias has no parameter) → dW_Q, dW_K, dW_V, dW_O
//   and the biases → the attention's input (through LN₁ in pre-norm) → the embeddings.
#include <vector>

#include "tensor/matrix.hpp"
#include "train/model.hpp"

namespace attn::train {

// Cross-entropy of the scored positions: returns Σᵢ −log softmax(logitsᵢ)[targetᵢ] over the
// scored rows (a sum, in double). When dlogits is given (n × V, same shape as logits) it
// adds weight·(softmax(logitsᵢ) − onehot(targetᵢ)) to each scored row: with weight =
// 1/(scored positions in the batch), the gradient of the batch's mean loss.
double cross_entropy(const Matrix& logits, const std::vector<int>& targets, const std::vector<bool>& scored,
                     float weight, Matrix* dlogits);

// Adds the gradient of the loss into grads (the layout of model.params, e.g. from
// zeros_like), given the forward pass of `input` and the loss's gradient at the logits.
void backward(const Model& model, const ModelInput& input, const ForwardPass& forward, const Matrix& dlogits,
              ModelParams& grads);

// Row-wise LayerNorm's backward: y = γ ⊙ (x − mean)/√(var + ε) + β. Returns dx (n × d);
// adds into dgamma and dbeta (1 × d) when they are given.
Matrix layer_norm_backward(const Matrix& x, const Matrix& gamma, float epsilon, const Matrix& dy, Vector* dgamma,
                           Vector* dbeta);

}  // namespace attn::train
