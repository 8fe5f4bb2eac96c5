/*
 * ONNX backend conformance (convgate/conformance.h): collecting test
 * directories, running one test (in a forked child with a timeout, or in
 * this process), and the manifest of expected failures. The child reports
 * one line through a pipe: 'P', 'F reason' or 'S reason'.
 */
/* realpath() is XSI; the rest of the file needs only POSIX.1-2008. */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "convgate/conformance.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"
#include "core/clock.h"
#include "core/file.h"
#include "core/path.h"
#include "ir/walk.h"

#define CONF_RTOL 1e-3
#define CONF_ATOL 1e-7
#define CONF_MAX_ALLOC ((size_t)1 << 30)

static const char *const cg_conf_status_name_of[] = {"pass", "fail", "skip"};

const char *cg_conf_status_name(cg_conf_status s)
{
    return (unsigned)s <= CG_CONF_SKIP ? cg_conf_status_name_of[s] : "?";
}

/* --- helpers ------------------------------------------------------------------------ */

static char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (!p)
        return NULL;
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

/* Last path component of path (trailing slashes ignored) into buf. */
static void base_name(const char *path, char *buf, size_t cap)
{
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/')
        start--;
    size_t n = end - start < cap - 1 ? end - start : cap - 1;
    memcpy(buf, path + start, n);
    buf[n] = '\0';
}

/* Flattens a message to one line and truncates it to the reason buffer. */
static void set_reason(char *dst, const char *src)
{
    size_t n = 0;
    for (; src && *src && n + 1 < CG_CONF_REASON_MAX; src++)
        dst[n++] = (*src == '\n' || *src == '\r' || *src == '\t') ? ' ' : *src;
    dst[n] = '\0';
}

/* printf into a reason (one line, truncated). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void reasonf(char *dst, const char *fmt, ...)
{
    char buf[4 * CG_CONF_REASON_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    set_reason(dst, buf);
}

/* A folder named test_data_set_N. */
static bool is_data_set(const char *path)
{
    const char *base = strrchr(path, '/');
    return strncmp(base ? base + 1 : path, "test_data_set_", 14) == 0 && cg_path_is_dir(path);
}

static bool has_model(const char *dir)
{
    char *m = path_join(dir, "model.onnx");
    bool ok = m && cg_path_is_file(m);
    free(m);
    return ok;
}

/* test_data_set_N sorted by N (not by text: 10 after 9). */
static int cmp_numbered(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    size_t lx = strlen(x), ly = strlen(y);
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

/* --- running one test ---------------------------------------------------------------- */

typedef struct test_io {
    const cg_value_info **inputs; /* graph inputs to feed, in order */
    size_t input_count;
} test_io;

/* ONNX's test generator stores bfloat16 tensors as UINT16 (NumPy has no
 * bfloat16): the bits are bfloat16 values. Where the model declares
 * bfloat16 and the file holds uint16, relabel the tensor; nothing else
 * is reinterpreted. */
static void bf16_quirk(cg_value *v, const cg_type *type)
{
    if (v && v->kind == CG_VALUE_TENSOR && type && type->kind == CG_TYPE_TENSOR &&
        type->has_elem_type && type->elem_type == CG_DTYPE_BFLOAT16 &&
        v->tensor.dtype == CG_DTYPE_UINT16)
        v->tensor.dtype = CG_DTYPE_BFLOAT16;
}

/* A float64-mode output held against a float32/16 expectation: rounded
 * to the expected type once (sequence and optional items too), so the
 * usual judgement applies. */
static cg_status demote_like(cg_value *got, const cg_value *want, cg_error *err)
{
    if (got->kind != want->kind || got->optional_is_sequence != want->optional_is_sequence ||
        (got->kind == CG_VALUE_OPTIONAL && (!got->has_value || !want->has_value)))
        return CG_OK;
    if (got->kind == CG_VALUE_SEQUENCE || got->optional_is_sequence) {
        for (size_t i = 0; i < got->item_count && i < want->item_count; i++) {
            cg_status st = demote_like(got->items[i], want->items[i], err);
            if (st != CG_OK)
                return st;
        }
        if (got->seq_dtype == CG_DTYPE_DOUBLE && cg_dtype_is_float(want->seq_dtype))
            got->seq_dtype = want->seq_dtype;
        return CG_OK;
    }
    cg_dtype to = want->tensor.dtype;
    if (got->tensor.dtype != CG_DTYPE_DOUBLE || to == CG_DTYPE_DOUBLE || !cg_dtype_is_float(to))
        return CG_OK;
    cg_tensor t;
    cg_status st = cg_tensor_convert(&got->tensor, to, &t, err);
    if (st != CG_OK)
        return st;
    cg_tensor_release(&got->tensor);
    got->tensor = t;
    got->seq_dtype = to;
    return CG_OK;
}

/* Runs every data set of one test; writes status and reason. Runs in the
 * child process (or in-process with --no-fork). */
static cg_conf_status run_test(const char *dir, const cg_runtime_options *opt, char *reason)
{
    bool fp64 = opt && opt->float64;
    cg_conf_status result = CG_CONF_FAIL;
    cg_error err;
    cg_model *model = NULL;
    cg_runtime *rt = NULL;
    char **sets = NULL;
    size_t set_count = 0;
    const cg_value_info **feedable = NULL;
    char *model_path = path_join(dir, "model.onnx");
    cg_error_clear(&err);
    if (!model_path) {
        set_reason(reason, "out of memory");
        return CG_CONF_FAIL;
    }
    cg_load_options lo;
    cg_load_options_default(&lo);
    if (cg_model_load(model_path, &lo, &model, &err) != CG_OK) {
        reasonf(reason, "load: %s", err.msg);
        goto done;
    }
    if (!model->graph) {
        set_reason(reason, "model has no graph");
        goto done;
    }
    const cg_graph *g = model->graph;
    cg_path_list(dir, is_data_set, &sets, &set_count, NULL);
    if (set_count == 0) {
        set_reason(reason, "no test_data_set_N directories");
        result = CG_CONF_SKIP;
        goto done;
    }
    qsort(sets, set_count, sizeof *sets, cmp_numbered);

    /* input_K.pb binds, in order, to the graph inputs that are not initializers. */
    feedable = calloc(g->input_count + 1, sizeof *feedable);
    if (!feedable) {
        set_reason(reason, "out of memory");
        goto done;
    }
    size_t feed_count = 0;
    for (size_t i = 0; i < g->input_count; i++)
        if (!cg_graph_initializer(g, g->inputs[i].name))
            feedable[feed_count++] = &g->inputs[i];

    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    if (opt)
        ro = *opt;
    ro.max_alloc_bytes = CONF_MAX_ALLOC;
    if (cg_runtime_init(model, &ro, &rt, &err) != CG_OK) {
        reasonf(reason, "init: %s", err.msg);
        goto done;
    }

    result = CG_CONF_PASS;
    for (size_t s = 0; s < set_count && result == CG_CONF_PASS; s++) {
        char *set_dir = path_join(dir, sets[s]);
        cg_named_value *ins = calloc(feed_count + 1, sizeof *ins);
        cg_named_value *outs = NULL;
        size_t in_count = 0, out_count = 0;
        if (!set_dir || !ins) {
            set_reason(reason, "out of memory");
            result = CG_CONF_FAIL;
            goto next_set;
        }
        for (size_t k = 0;; k++) {
            char file[64];
            snprintf(file, sizeof file, "input_%zu.pb", k);
            char *p = path_join(set_dir, file);
            if (!p || !cg_path_is_file(p)) {
                free(p);
                break;
            }
            if (k >= feed_count) {
                reasonf(reason, "%s has %s but the model has only %zu inputs to feed",
                         sets[s], file, feed_count);
                free(p);
                result = CG_CONF_FAIL;
                goto next_set;
            }
            cg_value *v = NULL;
            cg_error_clear(&err);
            cg_status st = cg_io_pb_load(p, feedable[k]->type, CONF_MAX_ALLOC, &v, &err);
            free(p);
            if (st != CG_OK) {
                reasonf(reason, "%s/%s: %s", sets[s], file, err.msg);
                result = st == CG_UNSUPPORTED ? CG_CONF_SKIP : CG_CONF_FAIL;
                goto next_set;
            }
            bf16_quirk(v, feedable[k]->type);
            ins[in_count].name = feedable[k]->name;
            ins[in_count++].value = v;
        }
        cg_error_clear(&err);
        if (cg_runtime_run(rt, ins, in_count, &outs, &out_count, &err) != CG_OK) {
            reasonf(reason, "%s: run: %s", sets[s], err.msg);
            result = CG_CONF_FAIL;
            goto next_set;
        }
        for (size_t k = 0;; k++) {
            char file[64];
            snprintf(file, sizeof file, "output_%zu.pb", k);
            char *p = path_join(set_dir, file);
            if (!p || !cg_path_is_file(p)) {
                free(p);
                if (k == 0) {
                    reasonf(reason, "%s has no output_0.pb", sets[s]);
                    result = CG_CONF_SKIP;
                }
                break;
            }
            if (k >= out_count || k >= g->output_count) {
                reasonf(reason, "%s has %s but the run produced %zu outputs", sets[s],
                         file, out_count);
                free(p);
                result = CG_CONF_FAIL;
                break;
            }
            cg_value *want = NULL;
            cg_error_clear(&err);
            cg_status st = cg_io_pb_load(p, g->outputs[k].type, CONF_MAX_ALLOC, &want, &err);
            free(p);
            if (st != CG_OK) {
                reasonf(reason, "%s/%s: %s", sets[s], file, err.msg);
                result = st == CG_UNSUPPORTED ? CG_CONF_SKIP : CG_CONF_FAIL;
                break;
            }
            bf16_quirk(want, g->outputs[k].type);
            if (fp64 && (st = demote_like(outs[k].value, want, &err)) != CG_OK) {
                reasonf(reason, "%s/%s: %s", sets[s], file, err.msg);
                cg_value_free(want);
                result = CG_CONF_FAIL;
                break;
            }
            char why[CG_CONF_REASON_MAX];
            bool same = cg_io_values_match(outs[k].value, want, CONF_RTOL, CONF_ATOL, why,
                                           sizeof why);
            cg_value_free(want);
            if (!same) {
                reasonf(reason, "%s output '%s': %s", sets[s],
                         g->outputs[k].name ? g->outputs[k].name : "", why);
                result = CG_CONF_FAIL;
                break;
            }
        }
    next_set:
        if (outs)
            cg_runtime_free_outputs(outs, out_count);
        for (size_t k = 0; ins && k < in_count; k++)
            cg_value_free(ins[k].value);
        free(ins);
        free(set_dir);
    }
done:
    free(feedable);
    cg_path_names_free(sets, set_count);
    cg_runtime_free(rt);
    cg_model_free(model);
    free(model_path);
    return result;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    default: return "signal";
    }
}

static double now_ms(void)
{
    return cg_clock_seconds(CLOCK_MONOTONIC) * 1e3;
}

/* Runs one test in a forked child with a timeout. */
static void run_isolated(cg_conf_test *t, int timeout_s, const cg_runtime_options *opt)
{
    int fds[2];
    char buf[CG_CONF_REASON_MAX + 8];
    size_t got = 0;
    if (pipe(fds) != 0) {
        t->status = CG_CONF_FAIL;
        set_reason(t->reason, "harness: pipe failed");
        return;
    }
    fflush(NULL); /* the child must not flush our buffered output again */
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        t->status = CG_CONF_FAIL;
        set_reason(t->reason, "harness: fork failed");
        return;
    }
    if (pid == 0) {
        char reason[CG_CONF_REASON_MAX];
        reason[0] = '\0';
        close(fds[0]);
        cg_conf_status st = run_test(t->dir, opt, reason);
        int n = snprintf(buf, sizeof buf, "%c%s", "PFS"[st], reason);
        size_t len = n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
        size_t off = 0;
        while (off < len) {
            ssize_t w = write(fds[1], buf + off, len - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    double deadline = now_ms() + timeout_s * 1000.0;
    bool timed_out = false;
    for (;;) {
        double left = deadline - now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int pr = poll(&pfd, 1, left > 1e9 ? 1000000000 : (int)left + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            timed_out = pr == 0;
            break;
        }
        ssize_t r = read(fds[0], buf + got, sizeof buf - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* EOF: the child is done */
        got += (size_t)r;
        if (got >= sizeof buf - 1)
            break;
    }
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int wst = 0;
    while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
        ;
    buf[got] = '\0';
    if (timed_out) {
        t->status = CG_CONF_FAIL;
        snprintf(t->reason, sizeof t->reason, "timed out after %d s (killed)", timeout_s);
    } else if (WIFSIGNALED(wst)) {
        t->status = CG_CONF_FAIL;
        snprintf(t->reason, sizeof t->reason, "crashed: %s (signal %d)",
                 signal_name(WTERMSIG(wst)), WTERMSIG(wst));
    } else if (got == 0 || !strchr("PFS", buf[0])) {
        t->status = CG_CONF_FAIL;
        snprintf(t->reason, sizeof t->reason, "harness: the test process exited with status %d "
                 "without a result", WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
    } else {
        t->status = buf[0] == 'P' ? CG_CONF_PASS : buf[0] == 'F' ? CG_CONF_FAIL : CG_CONF_SKIP;
        set_reason(t->reason, buf + 1);
    }
}

/* --- manifest --------------------------------------------------------------------------- */

void cg_conf_manifest_free(cg_conf_manifest *m)
{
    for (size_t i = 0; i < m->count; i++) {
        free(m->entries[i].name);
        free(m->entries[i].reason);
    }
    free(m->entries);
    free(m->header);
    memset(m, 0, sizeof *m);
}

cg_conf_entry *cg_conf_manifest_find(cg_conf_manifest *m, const char *name)
{
    for (size_t i = 0; i < m->count; i++)
        if (strcmp(m->entries[i].name, name) == 0)
            return &m->entries[i];
    return NULL;
}

/* Reads a manifest. missing_ok: a file that does not exist is an empty one. */
bool cg_conf_manifest_load(const char *path, bool missing_ok, cg_conf_manifest *m,
                           cg_error *err)
{
    memset(m, 0, sizeof *m);
    cg_error oerr;
    cg_error_clear(&oerr);
    FILE *f = cg_file_fopen_read(path, &oerr); /* a regular file only: never blocks */
    if (!f) {
        if (missing_ok && errno == ENOENT)
            return true;
        cg_error_set(err, oerr.status, "manifest: %s", oerr.msg);
        return false;
    }
    char *line = NULL;
    size_t cap = 0, header_len = 0, cap_entries = 0;
    ssize_t len;
    unsigned lineno = 0;
    bool ok = true, in_header = true;
    while (ok && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (line[0] == '#' || len == 0) {
            if (in_header) {
                char *grown = realloc(m->header, header_len + (size_t)len + 2);
                if (!grown) {
                    ok = false;
                    break;
                }
                m->header = grown;
                memcpy(m->header + header_len, line, (size_t)len);
                header_len += (size_t)len;
                m->header[header_len++] = '\n';
                m->header[header_len] = '\0';
            }
            continue;
        }
        in_header = false;
        char *tab1 = strchr(line, '\t');
        char *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        if (!tab1) {
            cg_error_set(err, CG_INVALID, "%s:%u: expected 'SUITE/TEST<TAB>fail|skip<TAB>reason'",
                      path, lineno);
            ok = false;
            break;
        }
        *tab1 = '\0';
        if (tab2)
            *tab2 = '\0';
        const char *word = tab1 + 1;
        cg_conf_status st;
        if (strcmp(word, "fail") == 0)
            st = CG_CONF_FAIL;
        else if (strcmp(word, "skip") == 0)
            st = CG_CONF_SKIP;
        else {
            cg_error_set(err, CG_INVALID, "%s:%u: status must be 'fail' or 'skip', not '%s'", path,
                      lineno, word);
            ok = false;
            break;
        }
        if (!strchr(line, '/')) {
            cg_error_set(err, CG_INVALID, "%s:%u: test name '%s' needs a suite ('node/%s')", path,
                      lineno, line, line);
            ok = false;
            break;
        }
        if (cg_conf_manifest_find(m, line)) {
            cg_error_set(err, CG_INVALID, "%s:%u: '%s' is listed twice", path, lineno, line);
            ok = false;
            break;
        }
        if (m->count == cap_entries) {
            size_t nc = cap_entries ? cap_entries * 2 : 256;
            cg_conf_entry *grown = realloc(m->entries, nc * sizeof *grown);
            if (!grown) {
                ok = false;
                break;
            }
            m->entries = grown;
            cap_entries = nc;
        }
        cg_conf_entry *e = &m->entries[m->count];
        e->name = strdup(line);
        e->reason = strdup(tab2 ? tab2 + 1 : "");
        e->status = st;
        e->seen = false;
        if (!e->name || !e->reason) {
            free(e->name);
            free(e->reason);
            ok = false;
            break;
        }
        m->count++;
    }
    free(line);
    fclose(f);
    if (!ok) {
        cg_error_set(err, CG_NOMEM, "manifest '%s': out of memory", path);
        cg_conf_manifest_free(m);
    }
    return ok;
}

typedef struct conf_line {
    const char *name;
    cg_conf_status status;
    const char *reason;
} conf_line;

static int cmp_line(const void *a, const void *b)
{
    return strcmp(((const conf_line *)a)->name, ((const conf_line *)b)->name);
}

/* Writes the manifest for --update-expect: every non-passing test of this
 * run, plus the old lines for tests this run did not cover. */
bool cg_conf_manifest_update(const char *path, const cg_conf_test *tests, size_t count,
                             cg_error *err)
{
    cg_conf_manifest old;
    if (!cg_conf_manifest_load(path, true, &old, err))
        return false;
    conf_line *lines = calloc(count + old.count + 1, sizeof *lines);
    size_t n = 0;
    bool ok = lines != NULL;
    for (size_t i = 0; ok && i < count; i++) {
        cg_conf_entry *e = cg_conf_manifest_find(&old, tests[i].name);
        if (e)
            e->seen = true;
        if (tests[i].status == CG_CONF_PASS)
            continue;
        lines[n].name = tests[i].name;
        lines[n].status = tests[i].status;
        lines[n].reason = e && e->reason[0] ? e->reason : "TODO";
        n++;
    }
    for (size_t i = 0; ok && i < old.count; i++)
        if (!old.entries[i].seen) {
            lines[n].name = old.entries[i].name;
            lines[n].status = old.entries[i].status;
            lines[n].reason = old.entries[i].reason;
            n++;
        }
    cg_atomic_file af;
    FILE *f = NULL;
    if (ok) {
        qsort(lines, n, sizeof *lines, cmp_line);
        ok = cg_atomic_begin(&af, path, err) == CG_OK;
        f = ok ? af.f : NULL;
    }
    if (ok) {
        if (old.header)
            fputs(old.header, f);
        else
            fputs("# ONNX backend tests NOT expected to pass on the reference runtime.\n"
                  "# SUITE/TEST<TAB>fail|skip<TAB>reason; checked by\n"
                  "# 'convgate conformance DIR --expect tests/conformance/expected.txt'.\n",
                  f);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s\t%s\t%s\n", lines[i].name, cg_conf_status_name_of[lines[i].status],
                    lines[i].reason);
        ok = cg_atomic_commit(&af, err) == CG_OK; /* removes the temporary on failure */
    }
    free(lines);
    cg_conf_manifest_free(&old);
    return ok;
}

bool cg_conf_collect(const char *dir, const char *filter, cg_conf_test **out, size_t *out_count,
                     char *suite, size_t suite_cap, bool *single_test, cg_error *err)
{
    char **names = NULL;
    size_t n = 0;
    cg_conf_test *tests = NULL;
    char parent[4096];
    *out = NULL;
    *out_count = 0;
    if (!cg_path_is_dir(dir)) {
        cg_error_set(err, CG_USAGE, "'%s' is not a directory", dir);
        return false;
    }
    bool single = has_model(dir);
    if (single_test)
        *single_test = single;
    if (single) {
        /* DIR is one test: its suite is the directory above it. */
        snprintf(parent, sizeof parent, "%s/..", dir);
        char *real = realpath(parent, NULL);
        base_name(real ? real : "tests", suite, suite_cap);
        free(real);
        n = 1;
    } else {
        char *real = realpath(dir, NULL);
        base_name(real ? real : dir, suite, suite_cap);
        free(real);
        cg_path_list(dir, has_model, &names, &n, NULL);
        if (n == 0) {
            cg_path_names_free(names, n);
            cg_error_set(err, CG_USAGE, "no tests in '%s': expected DIR/model.onnx or "
                         "DIR/*/model.onnx", dir);
            return false;
        }
    }
    tests = calloc(n ? n : 1, sizeof *tests);
    if (!tests) {
        cg_path_names_free(names, n);
        cg_error_set(err, CG_NOMEM, "out of memory");
        return false;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        char test_name[1024], full[2048];
        if (single) {
            char *real = realpath(dir, NULL);
            base_name(real ? real : dir, test_name, sizeof test_name);
            free(real);
        } else {
            snprintf(test_name, sizeof test_name, "%s", names[i]);
        }
        snprintf(full, sizeof full, "%s/%s", suite, test_name);
        if (filter && !strstr(full, filter))
            continue;
        tests[kept].name = strdup(full);
        tests[kept].dir = single ? strdup(dir) : path_join(dir, names[i]);
        if (!tests[kept].name || !tests[kept].dir) {
            free(tests[kept].name);
            free(tests[kept].dir);
            continue;
        }
        kept++;
    }
    cg_path_names_free(names, n);
    *out = tests;
    *out_count = kept;
    return true;
}


void cg_conf_tests_free(cg_conf_test *tests, size_t count)
{
    for (size_t i = 0; tests && i < count; i++) {
        free(tests[i].name);
        free(tests[i].dir);
    }
    free(tests);
}

void cg_conf_run(cg_conf_test *t, bool isolate, int timeout_s, const cg_runtime_options *opt)
{
    double t0 = now_ms();
    if (isolate) {
        run_isolated(t, timeout_s, opt);
    } else {
        t->reason[0] = '\0';
        t->status = run_test(t->dir, opt, t->reason);
    }
    t->ms = now_ms() - t0;
}

void cg_conf_run_all(cg_conf_test *tests, size_t count, const cg_conf_options *opt,
                     size_t *passed, size_t *failed, size_t *skipped)
{
    size_t n[3] = {0, 0, 0};
    for (size_t i = 0; i < count; i++) {
        cg_progress_report(&opt->progress, "conformance", "tests", i, count, tests[i].name);
        cg_conf_run(&tests[i], opt->isolate, opt->timeout_s, opt->runtime);
        if ((unsigned)tests[i].status < 3)
            n[tests[i].status]++;
        if (opt->done)
            opt->done(opt->done_user, &tests[i]);
    }
    if (passed)
        *passed = n[CG_CONF_PASS];
    if (failed)
        *failed = n[CG_CONF_FAIL];
    if (skipped)
        *skipped = n[CG_CONF_SKIP];
}

size_t cg_conf_deviations(const cg_conf_test *tests, size_t count, cg_conf_manifest *m,
                          const char *suite, bool whole_suite, char ***out)
{
    char **lines = calloc(count + m->count + 1, sizeof *lines);
    size_t n = 0;
    *out = lines;
    if (!lines)
        return 0;
    for (size_t i = 0; i < count; i++) {
        const cg_conf_test *t = &tests[i];
        cg_conf_entry *e = cg_conf_manifest_find(m, t->name);
        char line[CG_CONF_REASON_MAX + 1200];
        line[0] = '\0';
        if (e)
            e->seen = true;
        if (!e && t->status != CG_CONF_PASS)
            snprintf(line, sizeof line, "unexpected %s: %s: %s", cg_conf_status_name(t->status),
                     t->name, t->reason);
        else if (e && t->status == CG_CONF_PASS)
            snprintf(line, sizeof line, "unexpected pass: %s (listed as %s: remove it from "
                     "the manifest)", t->name, cg_conf_status_name(e->status));
        else if (e && e->status != t->status)
            snprintf(line, sizeof line, "unexpected %s: %s (listed as %s): %s",
                     cg_conf_status_name(t->status), t->name, cg_conf_status_name(e->status),
                     t->reason);
        if (line[0])
            lines[n++] = strdup(line);
    }
    /* A listed test of this suite that is gone is stale (only when the
     * whole suite ran: a filter or a single test covers part of it). */
    size_t suite_len = strlen(suite);
    for (size_t i = 0; whole_suite && i < m->count; i++) {
        const cg_conf_entry *e = &m->entries[i];
        if (e->seen || strncmp(e->name, suite, suite_len) != 0 || e->name[suite_len] != '/')
            continue;
        char line[1200];
        snprintf(line, sizeof line, "stale manifest entry: %s (no such test)", e->name);
        lines[n++] = strdup(line);
    }
    return n;
}

void cg_conf_deviations_free(char **lines, size_t count)
{
    for (size_t i = 0; lines && i < count; i++)
        free(lines[i]);
    free(lines);
}
