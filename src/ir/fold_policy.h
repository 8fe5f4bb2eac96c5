/* What convgate's runtime folds at init (src/run/fold.c), stated once so
 * that the xnnpack target's "convgate-init" lowering (src/lower/
 * convgate_init.c), which predicts that folding, cannot drift from it. */
#ifndef CG_IR_FOLD_POLICY_H
#define CG_IR_FOLD_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Outputs above this many bytes fold only while at most twice their
 * inputs' bytes. */
#define CG_FOLD_FREE_BYTES ((size_t)16 << 20)

static inline bool cg_fold_size_ok(size_t out_bytes, size_t in_bytes)
{
    return out_bytes <= CG_FOLD_FREE_BYTES || out_bytes / 2 <= in_bytes;
}

/* Ops whose outputs differ from run to run: never folded. */
static inline bool cg_fold_op_is_random(const char *op)
{
    static const char *const random_ops[] = {"RandomNormal", "RandomUniform",
                                             "RandomNormalLike", "RandomUniformLike",
                                             "Bernoulli", "Multinomial"};
    for (size_t i = 0; i < sizeof random_ops / sizeof random_ops[0]; i++)
        if (strcmp(op, random_ops[i]) == 0)
            return true;
    return false;
}

#endif
