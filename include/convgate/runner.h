/*
 * External runners: a .tflite executed by the real LiteRT instead of
 * convgate's reference runtime or its emulation of a target, so what a
 * command reports about them is measured, not predicted.
 *
 *   litert-node    LiteRT.js (@litertjs/core, pinned in tools/litert/) in
 *                  Node on the CPU: the XNNPACK delegate, as LiteRT runs on
 *                  a CPU;
 *   litert-webgpu  LiteRT.js's WebGPU path (ML Drift) in headless Chromium
 *                  on its SwiftShader adapter: the GPU delegate's partition
 *                  of the model, with the residency it logs (ops on the GPU
 *                  and on the CPU, the ops it refuses and why).
 *
 * convgate starts tools/litert/run_node.mjs or run_webgpu.mjs once for a
 * batch of samples and exchanges .npy files through a private work folder
 * (removed by cg_runner_free). The runner scripts' folder is
 * $CONVGATE_LITERT, else the installed share/convgate/litert, else the
 * source tree's tools/litert. Missing node, LiteRT.js's packages or
 * Chromium are errors that say what to install. LiteRT.js's tensors carry
 * float32, int32 and uint8 only, and it cannot resize inputs: samples take
 * the shapes recorded in the .tflite.
 */
#ifndef CONVGATE_RUNNER_H
#define CONVGATE_RUNNER_H

#include <stdbool.h>
#include <stddef.h>

#include "convgate/api.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cg_runner_kind {
    CG_RUNNER_NONE = 0,
    CG_RUNNER_LITERT_NODE,
    CG_RUNNER_LITERT_WEBGPU
} cg_runner_kind;

/* "litert-node" / "litert-webgpu" -> the kind; CG_RUNNER_NONE if unknown. */
CG_API cg_runner_kind cg_runner_kind_parse(const char *name);
CG_API const char *cg_runner_kind_name(cg_runner_kind kind);

typedef struct cg_runner_options {
    cg_runner_kind kind;
    const char *precision;   /* litert-webgpu: "fp32" (default) or "fp16" */
    const char *litert_dir;  /* NULL: as above */
} cg_runner_options;

/* The runner computes in reduced precision (the WebGPU delegate at fp16):
 * its outputs are judged against the fp16 floor. */
CG_API bool cg_runner_reduced(const cg_runner_options *opt);

/* What the real LiteRT said about the model (the first sample's run). */
typedef struct cg_runner_rejected {
    char *op, *reason;
} cg_runner_rejected;

typedef struct cg_runner_report {
    char runtime[64];         /* "@litertjs/core 2.5.3" */
    char accelerator[32];     /* "wasm (XNNPACK)", "webgpu" */
    char adapter[128];        /* webgpu: "google/swiftshader" */
    char precision[8];        /* webgpu */
    /* webgpu residency, measured from the delegate's log */
    bool has_residency;
    bool fully_accelerated;
    long gpu_ops, cpu_ops;
    char residency_from[64];  /* "delegate log", "fully_accelerated", ... */
    cg_runner_rejected *rejected;
    size_t rejected_count;
    char delegate_error[512]; /* the delegate accepted ops, then failed to build */
    double seconds;           /* wall time of the whole batch (start-up included) */
} cg_runner_report;

typedef struct cg_runner cg_runner;

/* A runner for model (lowered from the .tflite at model_path). Checks that
 * node, the runner scripts, LiteRT.js's packages and (webgpu) Chromium are
 * there, naming what is missing. */
CG_API CG_NODISCARD cg_status cg_runner_init(const cg_runner_options *opt, const char *model_path,
                         const cg_model *model, cg_runner **out, cg_error *err);
/* Queues one sample (the model's graph inputs, by name); returns its index. */
CG_API CG_NODISCARD cg_status cg_runner_add(cg_runner *r, const cg_named_value *inputs, size_t count, size_t *index,
                        cg_error *err);
/* Runs every queued sample in one LiteRT process. */
CG_API CG_NODISCARD cg_status cg_runner_run(cg_runner *r, cg_error *err);
/* Sample i's outputs in the model's graph-output order (named as the
 * model's outputs); free with cg_runtime_free_outputs. */
CG_API CG_NODISCARD cg_status cg_runner_outputs(cg_runner *r, size_t i, cg_named_value **outputs, size_t *count,
                            cg_error *err);
CG_API const cg_runner_report *cg_runner_get_report(const cg_runner *r);
CG_API void cg_runner_free(cg_runner *r);

#ifdef __cplusplus
}
#endif
#endif
