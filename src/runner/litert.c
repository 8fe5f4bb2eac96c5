/*
 * The real LiteRT as a runner (convgate/runner.h): LiteRT.js driven through
 * tools/litert/run_node.mjs (CPU, XNNPACK) or run_webgpu.mjs (WebGPU in
 * headless Chromium), one process per batch of samples, .npy files and a
 * JSON result exchanged through a private work folder.
 *
 * The work folder (mkdtemp under $TMPDIR) holds model.tflite (the bytes the
 * model was lowered from, so a model read from standard input runs too),
 * in/<sample>/<k>.npy, jobs.json, the runner's output and its log; it is
 * removed, without following links, when the runner is freed.
 */
#include "convgate/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "convgate/samples.h"
#include "convgate/tensor_io.h"
#include "convgate/tflite.h"
#include "core/path.h"
#include "core/selfpath.h"

#ifndef CG_LITERT_DIR
#define CG_LITERT_DIR "tools/litert"
#endif

#define RUNNER_PATH_MAX 4096
#define RUNNER_DIR_MAX 1024 /* the work folder and the runners' folder: room left for names */
#define RUNNER_TIMEOUT_S 1800

struct cg_runner {
    cg_runner_options opt;
    const cg_model *model;
    char litert[RUNNER_DIR_MAX];
    char work[RUNNER_DIR_MAX];
    char model_file[RUNNER_PATH_MAX];
    json_t *jobs;             /* [{id, model, inputs: [{name, file}]}] */
    size_t count;
    json_t *results;          /* id -> result (node: result.json; webgpu: its entry) */
    char out_dir[RUNNER_DIR_MAX + 32];
    cg_runner_report report;
    bool ran;
};

cg_runner_kind cg_runner_kind_parse(const char *name)
{
    if (name && strcmp(name, "litert-node") == 0)
        return CG_RUNNER_LITERT_NODE;
    if (name && strcmp(name, "litert-webgpu") == 0)
        return CG_RUNNER_LITERT_WEBGPU;
    return CG_RUNNER_NONE;
}

const char *cg_runner_kind_name(cg_runner_kind kind)
{
    return kind == CG_RUNNER_LITERT_NODE     ? "litert-node"
           : kind == CG_RUNNER_LITERT_WEBGPU ? "litert-webgpu"
                                             : "none";
}

bool cg_runner_reduced(const cg_runner_options *opt)
{
    return opt && opt->kind == CG_RUNNER_LITERT_WEBGPU && opt->precision &&
           strcmp(opt->precision, "fp16") == 0;
}

/* --- the environment ----------------------------------------------------------------- */

/* An executable named `name` on $PATH (absolute names as they are). */
static bool find_program(const char *name, char *out, size_t cap)
{
    if (strchr(name, '/')) {
        snprintf(out, cap, "%s", name);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        if (n && n + strlen(name) + 2 <= cap) {
            snprintf(out, cap, "%.*s/%s", (int)n, path, name);
            if (access(out, X_OK) == 0)
                return true;
        }
        path += n + (end ? 1 : 0);
    }
    return false;
}

static bool is_file(const char *dir, const char *rel)
{
    char p[RUNNER_PATH_MAX];
    struct stat st;
    return snprintf(p, sizeof p, "%s/%s", dir, rel) < (int)sizeof p && stat(p, &st) == 0 &&
           S_ISREG(st.st_mode);
}

static cg_status find_litert(cg_runner *r, cg_error *err)
{
    const char *env = getenv("CONVGATE_LITERT");
    char installed[RUNNER_PATH_MAX];
    const char *dir = env && *env ? env
                      : cg_installed_data_dir("litert", installed, sizeof installed)
                          ? installed : CG_LITERT_DIR;
    if (snprintf(r->litert, sizeof r->litert, "%s", dir) >= (int)sizeof r->litert)
        return cg_error_set(err, CG_LIMIT, "the LiteRT runners' folder path is too long: %s",
                            dir);
    const char *script = r->opt.kind == CG_RUNNER_LITERT_WEBGPU ? "run_webgpu.mjs"
                                                                : "run_node.mjs";
    if (!is_file(r->litert, script))
        return cg_error_set(err, CG_USAGE, "%s: the LiteRT runner %s/%s is missing (set "
                            "$CONVGATE_LITERT to convgate's tools/litert folder)",
                            cg_runner_kind_name(r->opt.kind), r->litert, script);
    if (!is_file(r->litert, "node_modules/@litertjs/core/package.json"))
        return cg_error_set(err, CG_USAGE, "%s: LiteRT.js is not installed in %s/node_modules "
                            "(run scripts/setup.sh, or `npm ci --ignore-scripts` in %s)",
                            cg_runner_kind_name(r->opt.kind), r->litert, r->litert);
    return CG_OK;
}

/* --- life cycle ---------------------------------------------------------------------- */

void cg_runner_free(cg_runner *r)
{
    if (!r)
        return;
    if (r->work[0] && !getenv("CONVGATE_KEEP_RUNNER_DIR"))
        cg_path_remove_tree(r->work);
    json_decref(r->jobs);
    json_decref(r->results);
    for (size_t i = 0; i < r->report.rejected_count; i++) {
        free(r->report.rejected[i].op);
        free(r->report.rejected[i].reason);
    }
    free(r->report.rejected);
    free(r);
}

cg_status cg_runner_init(const cg_runner_options *opt, const char *model_path,
                         const cg_model *model, cg_runner **out, cg_error *err)
{
    char prog[RUNNER_PATH_MAX];
    *out = NULL;
    if (!opt || opt->kind == CG_RUNNER_NONE || !model)
        return cg_error_set(err, CG_USAGE, "cg_runner_init: a runner kind and a model needed");
    if (!model->tflite)
        return cg_error_set(err, CG_USAGE, "%s runs .tflite models; %s is an ONNX model",
                            cg_runner_kind_name(opt->kind), model_path ? model_path : "the model");
    if (opt->kind == CG_RUNNER_LITERT_WEBGPU && opt->precision &&
        strcmp(opt->precision, "fp32") != 0 && strcmp(opt->precision, "fp16") != 0)
        return cg_error_set(err, CG_USAGE, "the WebGPU precision is fp32 or fp16, got '%s'",
                            opt->precision);
    if (!find_program("node", prog, sizeof prog))
        return cg_error_set(err, CG_USAGE, "%s: node is not installed (LiteRT.js runs in Node "
                            "20; scripts/setup.sh installs it)", cg_runner_kind_name(opt->kind));
    if (opt->kind == CG_RUNNER_LITERT_WEBGPU) {
        const char *env = getenv("CG_CHROMIUM");
        if (!(env && *env && find_program(env, prog, sizeof prog)) &&
            !find_program("chromium", prog, sizeof prog) &&
            !find_program("chromium-browser", prog, sizeof prog))
            return cg_error_set(err, CG_USAGE, "litert-webgpu: chromium is not installed "
                                "(LiteRT.js's WebGPU path runs in headless Chromium; "
                                "scripts/setup.sh installs Debian's)");
    }
    cg_runner *r = calloc(1, sizeof *r);
    if (!r)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    r->opt = *opt;
    r->model = model;
    cg_status st = find_litert(r, err);
    char *work = NULL;
    if (st == CG_OK && (st = cg_path_make_temp_dir("convgate-runner", &work, err)) == CG_OK) {
        if (snprintf(r->work, sizeof r->work, "%s", work) >= (int)sizeof r->work) {
            st = cg_error_set(err, CG_LIMIT, "$TMPDIR is too long: %s", work);
            cg_path_remove_tree(work);
            r->work[0] = '\0';
        }
        free(work);
    }
    if (st == CG_OK) {
        /* the bytes the model was lowered from */
        const cg_tflite_model *tm = model->tflite->source;
        snprintf(r->model_file, sizeof r->model_file, "%s/model.tflite", r->work);
        FILE *f = fopen(r->model_file, "wb");
        if (!f || fwrite(tm->bytes, 1, tm->file_size, f) != tm->file_size)
            st = cg_error_set(err, CG_IO, "%s: cannot write: %s", r->model_file,
                              strerror(errno));
        if (f && fclose(f) != 0 && st == CG_OK)
            st = cg_error_set(err, CG_IO, "%s: cannot write: %s", r->model_file,
                              strerror(errno));
    }
    if (st == CG_OK && !(r->jobs = json_array()))
        st = cg_error_set(err, CG_NOMEM, "out of memory");
    if (st != CG_OK) {
        cg_runner_free(r);
        return st;
    }
    snprintf(r->report.runtime, sizeof r->report.runtime, "@litertjs/core");
    snprintf(r->report.accelerator, sizeof r->report.accelerator, "%s",
             opt->kind == CG_RUNNER_LITERT_WEBGPU ? "webgpu" : "wasm (XNNPACK)");
    snprintf(r->report.precision, sizeof r->report.precision, "%s",
             opt->precision ? opt->precision : "fp32");
    *out = r;
    return CG_OK;
}

/* The name LiteRT knows graph input/output i by: its signature name, else
 * the tensor's name. */
static const char *litert_name(const cg_model *m, bool input, size_t i)
{
    const char *sig = cg_tflite_signature_name(m, input, i);
    const cg_value_info *vi = input ? &m->graph->inputs[i] : &m->graph->outputs[i];
    return sig ? sig : vi->name ? vi->name : "";
}

cg_status cg_runner_add(cg_runner *r, const cg_named_value *inputs, size_t count, size_t *index,
                        cg_error *err)
{
    char dir[RUNNER_DIR_MAX + 64], file[RUNNER_PATH_MAX], id[32];
    const cg_graph *g = r->model->graph;
    json_t *specs = json_array(), *job = json_object();
    cg_status st = CG_OK;
    snprintf(id, sizeof id, "%zu", r->count);
    snprintf(dir, sizeof dir, "%s/in/%zu", r->work, r->count);
    if (!specs || !job) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto done;
    }
    char parent[RUNNER_PATH_MAX];
    snprintf(parent, sizeof parent, "%s/in", r->work);
    if ((mkdir(parent, 0700) != 0 && errno != EEXIST) || mkdir(dir, 0700) != 0) {
        st = cg_error_set(err, CG_IO, "%s: %s", dir, strerror(errno));
        goto done;
    }
    for (size_t k = 0; k < g->input_count && st == CG_OK; k++) {
        const char *name = g->inputs[k].name;
        const cg_value *v = NULL;
        for (size_t i = 0; i < count && !v; i++)
            if (inputs[i].name && name && strcmp(inputs[i].name, name) == 0)
                v = inputs[i].value;
        if (!v || v->kind != CG_VALUE_TENSOR) {
            st = cg_error_set(err, CG_USAGE, "input '%s' is %s", name ? name : "?",
                              v ? "not a tensor" : "missing");
            break;
        }
        cg_dtype dt = v->tensor.dtype;
        if (dt != CG_DTYPE_FLOAT && dt != CG_DTYPE_INT32 && dt != CG_DTYPE_UINT8) {
            st = cg_error_set(err, CG_UNSUPPORTED, "input '%s' is %s: LiteRT.js's tensors carry "
                              "float32, int32 and uint8 only", name, cg_dtype_name(dt));
            break;
        }
        snprintf(file, sizeof file, "%s/%zu.npy", dir, k);
        if ((st = cg_npy_save(file, &v->tensor, err)) != CG_OK)
            break;
        json_t *spec = json_pack("{s:s, s:s}", "name", litert_name(r->model, true, k), "file",
                                 file);
        if (!spec || json_array_append_new(specs, spec) != 0)
            st = cg_error_set(err, CG_NOMEM, "out of memory");
    }
    if (st == CG_OK &&
        (json_object_set_new(job, "id", json_string(id)) != 0 ||
         json_object_set_new(job, "model", json_string(r->model_file)) != 0 ||
         json_object_set(job, "inputs", specs) != 0 || json_array_append(r->jobs, job) != 0))
        st = cg_error_set(err, CG_NOMEM, "out of memory");
    if (st == CG_OK)
        *index = r->count++;
done:
    json_decref(specs);
    json_decref(job);
    return st;
}

/* --- running --------------------------------------------------------------------------- */

/* The last lines of the runner's log, for messages. */
static void log_tail(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "rb");
    out[0] = '\0';
    if (!f)
        return;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        long from = size > (long)cap - 1 ? size - (long)cap + 1 : 0;
        if (fseek(f, from, SEEK_SET) == 0) {
            size_t n = fread(out, 1, cap - 1, f);
            out[n] = '\0';
        }
    }
    fclose(f);
    for (char *c = out; *c; c++)
        if (*c == '\n' && c[1])
            *c = ' ';
}

/* Runs argv with stdout and stderr into log; the exit status in *code. */
static cg_status spawn_wait(char *const argv[], const char *log, int *code, cg_error *err)
{
    const char *env = getenv("CONVGATE_RUNNER_TIMEOUT");
    long limit = env && atol(env) > 0 ? atol(env) : RUNNER_TIMEOUT_S;
    pid_t pid = fork();
    if (pid < 0)
        return cg_error_set(err, CG_IO, "cannot start %s: %s", argv[0], strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    time_t start = time(NULL);
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return cg_error_set(err, CG_IO, "waiting for %s: %s", argv[0], strerror(errno));
        if (time(NULL) - start > limit) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            return cg_error_set(err, CG_RUNTIME, "%s did not finish in %ld s "
                                "($CONVGATE_RUNNER_TIMEOUT)", argv[1], limit);
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return CG_OK;
}

static void copy_str(char *dst, size_t cap, json_t *v)
{
    if (json_is_string(v))
        snprintf(dst, cap, "%s", json_string_value(v));
}

/* The residency and adapter of the WebGPU run of sample 0. */
static cg_status read_residency(cg_runner *r, json_t *batch, json_t *res, cg_error *err)
{
    cg_runner_report *rep = &r->report;
    json_t *adapter = json_object_get(batch, "adapter");
    if (json_is_object(adapter))
        snprintf(rep->adapter, sizeof rep->adapter, "%s/%s",
                 json_string_value(json_object_get(adapter, "vendor"))
                     ? json_string_value(json_object_get(adapter, "vendor")) : "?",
                 json_string_value(json_object_get(adapter, "architecture"))
                     ? json_string_value(json_object_get(adapter, "architecture")) : "?");
    copy_str(rep->runtime, sizeof rep->runtime, json_object_get(batch, "runtime"));
    json_t *resid = json_object_get(res, "residency");
    if (!json_is_object(resid))
        return CG_OK;
    rep->has_residency = true;
    rep->fully_accelerated = json_is_true(json_object_get(res, "fully_accelerated"));
    rep->gpu_ops = (long)json_integer_value(json_object_get(resid, "gpu_ops"));
    rep->cpu_ops = (long)json_integer_value(json_object_get(resid, "cpu_ops"));
    copy_str(rep->residency_from, sizeof rep->residency_from, json_object_get(resid, "source"));
    copy_str(rep->delegate_error, sizeof rep->delegate_error,
             json_object_get(resid, "delegate_error"));
    json_t *rej = json_object_get(resid, "rejected");
    size_t n = json_array_size(rej);
    rep->rejected = calloc(n + 1, sizeof *rep->rejected);
    if (!rep->rejected)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(rej, i);
        const char *op = json_string_value(json_object_get(e, "op"));
        const char *why = json_string_value(json_object_get(e, "reason"));
        rep->rejected[i].op = strdup(op ? op : "?");
        rep->rejected[i].reason = strdup(why ? why : "");
        if (!rep->rejected[i].op || !rep->rejected[i].reason)
            return cg_error_set(err, CG_NOMEM, "out of memory");
        rep->rejected_count++;
    }
    return CG_OK;
}

cg_status cg_runner_run(cg_runner *r, cg_error *err)
{
    char jobs[RUNNER_PATH_MAX], log[RUNNER_PATH_MAX], script[RUNNER_PATH_MAX],
        tail[1200];
    bool webgpu = r->opt.kind == CG_RUNNER_LITERT_WEBGPU;
    int code = 0;
    if (!r->count)
        return cg_error_set(err, CG_USAGE, "cg_runner_run: no samples queued");
    snprintf(jobs, sizeof jobs, "%s/jobs.json", r->work);
    snprintf(log, sizeof log, "%s/log.txt", r->work);
    snprintf(script, sizeof script, "%s/%s", r->litert, webgpu ? "run_webgpu.mjs" : "run_node.mjs");
    snprintf(r->out_dir, sizeof r->out_dir, "%s/%s", r->work, webgpu ? "webgpu.json" : "out");
    if (json_dump_file(r->jobs, jobs, 0) != 0)
        return cg_error_set(err, CG_IO, "%s: cannot write", jobs);
    char *argv[8];
    int a = 0;
    argv[a++] = "node";
    argv[a++] = script;
    if (webgpu) {
        argv[a++] = "--precision";
        argv[a++] = (char *)(r->opt.precision ? r->opt.precision : "fp32");
    }
    argv[a++] = "--batch";
    argv[a++] = jobs;
    argv[a++] = r->out_dir;
    argv[a] = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cg_status st = spawn_wait(argv, log, &code, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->report.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (st != CG_OK)
        return st;
    if (code != 0) {
        log_tail(log, tail, sizeof tail);
        return cg_error_set(err, code == 2 ? CG_USAGE : CG_RUNTIME, "%s exited with status %d: "
                            "%s", script, code, tail);
    }
    json_error_t je;
    char summary[RUNNER_PATH_MAX];
    json_t *batch = NULL;
    if (webgpu) {
        batch = json_load_file(r->out_dir, 0, &je);
        r->results = batch ? json_incref(json_object_get(batch, "results")) : NULL;
    } else {
        snprintf(summary, sizeof summary, "%s/summary.json", r->out_dir);
        r->results = json_load_file(summary, 0, &je);
    }
    if (!json_is_object(r->results)) {
        json_decref(batch);
        return cg_error_set(err, CG_RUNTIME, "%s: no results (%s)", script, je.text);
    }
    json_t *first = json_object_get(r->results, "0");
    if (webgpu && first)
        st = read_residency(r, batch, first, err);
    json_decref(batch);
    r->ran = true;
    return st;
}

/* --- outputs -------------------------------------------------------------------------- */

static cg_status tensor_from_json(json_t *o, cg_tensor *t, cg_error *err)
{
    const char *dt = json_string_value(json_object_get(o, "dtype"));
    json_t *shape = json_object_get(o, "shape"), *data = json_object_get(o, "data");
    int64_t dims[CG_MAX_RANK];
    size_t rank = json_array_size(shape);
    cg_dtype d = dt ? cg_dtype_from_name(dt) : CG_DTYPE_UNDEFINED;
    if (d != CG_DTYPE_FLOAT && d != CG_DTYPE_INT32 && d != CG_DTYPE_UINT8)
        return cg_error_set(err, CG_RUNTIME, "LiteRT returned an output of type '%s'",
                            dt ? dt : "?");
    if (rank > CG_MAX_RANK)
        return cg_error_set(err, CG_RUNTIME, "LiteRT returned a rank-%zu output", rank);
    for (size_t i = 0; i < rank; i++)
        dims[i] = json_integer_value(json_array_get(shape, i));
    cg_status st = cg_tensor_alloc(t, d, (int)rank, dims, 0, err);
    if (st != CG_OK)
        return st;
    if ((int64_t)json_array_size(data) != t->numel) {
        cg_tensor_release(t);
        return cg_error_set(err, CG_RUNTIME, "LiteRT returned %zu values for a shape of %lld",
                            json_array_size(data), (long long)t->numel);
    }
    for (int64_t i = 0; i < t->numel; i++)
        cg_tensor_set_f64(t, i, json_number_value(json_array_get(data, (size_t)i)));
    return CG_OK;
}

cg_status cg_runner_outputs(cg_runner *r, size_t i, cg_named_value **outputs, size_t *count,
                            cg_error *err)
{
    char id[32], path[RUNNER_PATH_MAX];
    const cg_graph *g = r->model->graph;
    *outputs = NULL;
    *count = 0;
    if (!r->ran || i >= r->count)
        return cg_error_set(err, CG_USAGE, "cg_runner_outputs: sample %zu was not run", i);
    snprintf(id, sizeof id, "%zu", i);
    json_t *res = json_object_get(r->results, id), *loaded = NULL;
    if (!json_is_object(res) || !json_is_true(json_object_get(res, "ok"))) {
        const char *why = json_string_value(json_object_get(res, "error"));
        return cg_error_set(err, CG_RUNTIME, "LiteRT (%s) failed: %s",
                            cg_runner_kind_name(r->opt.kind), why ? why : "no result");
    }
    json_t *outs = json_object_get(res, "outputs");
    if (r->opt.kind == CG_RUNNER_LITERT_NODE) {
        const char *dir = json_string_value(json_object_get(res, "dir"));
        json_error_t je;
        if (!dir || snprintf(path, sizeof path, "%s/result.json", dir) >= (int)sizeof path ||
            !(loaded = json_load_file(path, 0, &je)))
            return cg_error_set(err, CG_RUNTIME, "LiteRT's result for sample %zu is missing", i);
        outs = json_object_get(loaded, "outputs");
        copy_str(r->report.runtime, sizeof r->report.runtime, json_object_get(loaded, "runtime"));
    }
    size_t n = json_array_size(outs);
    cg_named_value *o = calloc(g->output_count + 1, sizeof *o);
    cg_status st = o ? CG_OK : cg_error_set(err, CG_NOMEM, "out of memory");
    if (st == CG_OK && n != g->output_count)
        st = cg_error_set(err, CG_RUNTIME, "LiteRT returned %zu outputs, the model has %zu", n,
                          g->output_count);
    for (size_t k = 0; k < g->output_count && st == CG_OK; k++) {
        /* the output LiteRT names like this one, else the one at its position */
        const char *want = litert_name(r->model, false, k);
        size_t j = k;
        for (size_t q = 0; q < n; q++) {
            const char *nm = json_string_value(json_object_get(json_array_get(outs, q), "name"));
            if (nm && strcmp(nm, want) == 0) {
                j = q;
                break;
            }
        }
        json_t *e = json_array_get(outs, j);
        cg_tensor t;
        if (r->opt.kind == CG_RUNNER_LITERT_NODE) {
            const char *file = json_string_value(json_object_get(e, "file"));
            const char *dir = json_string_value(json_object_get(res, "dir"));
            if (!file || !dir || snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path) {
                st = cg_error_set(err, CG_RUNTIME, "LiteRT's output %zu has no file", j);
                break;
            }
            st = cg_npy_load(path, 0, &t, err);
        } else {
            st = tensor_from_json(e, &t, err);
        }
        o[k].name = g->outputs[k].name;
        if (st == CG_OK && (st = cg_value_from_tensor(&t, &o[k].value, err)) != CG_OK)
            cg_tensor_release(&t);
        if (st != CG_OK)
            cg_error_prefix(err, "output '%s': ", g->outputs[k].name ? g->outputs[k].name : "?");
    }
    json_decref(loaded);
    if (st != CG_OK) {
        if (o)
            cg_runtime_free_outputs(o, g->output_count);
        return st;
    }
    *outputs = o;
    *count = g->output_count;
    return CG_OK;
}

const cg_runner_report *cg_runner_get_report(const cg_runner *r) { return &r->report; }
