/*
 * convgate conformance: run ONNX backend test directories (model.onnx plus
 * test_data_set_N/{input,output}_K.pb) on the reference runtime, judge each
 * output with ONNX's tolerance (rtol 1e-3, atol 1e-7, NaN-aware), and hold
 * the results against a manifest of the tests NOT expected to pass.
 *
 * Isolation: each test runs in a forked child with a wall-clock timeout, so
 * a crash, hang or runaway allocation in one test is a FAIL naming the
 * signal, never the end of the run. The child reports one line through a
 * pipe: 'P', 'F reason' or 'S reason'.
 *
 * Manifest format (tests/conformance/expected.txt), one test per line:
 *   suite/test_name<TAB>fail|skip<TAB>reason
 * with '#' comments and blank lines. Any deviation in either direction (an
 * unlisted failure, or a listed test that now passes) makes the run fail.
 */
/* realpath() is XSI; the rest of the file needs only POSIX.1-2008. */
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
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

#include "cli.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"
#include "report/json.h"

#define CONF_RTOL 1e-3
#define CONF_ATOL 1e-7
#define CONF_REASON_MAX 600
#define CONF_MAX_ALLOC ((size_t)1 << 30)

typedef enum conf_status { CONF_PASS = 0, CONF_FAIL, CONF_SKIP } conf_status;
static const char *const status_word[] = {"pass", "fail", "skip"};
static const char *const status_label[] = {"PASS", "FAIL", "SKIP"};

typedef struct conf_test {
    char *dir;  /* test directory */
    char *name; /* suite/test_name */
    conf_status status;
    char reason[CONF_REASON_MAX];
    double ms;
} conf_test;

typedef struct conf_entry { /* one manifest line */
    char *name;
    conf_status status;
    char *reason;
    bool seen; /* matched a test of this run */
} conf_entry;

typedef struct conf_manifest {
    conf_entry *entries;
    size_t count;
    char *header; /* leading comment block, kept by --update-expect */
} conf_manifest;

typedef struct conf_args {
    const char *dir, *filter, *expect, *update;
    bool json, verbose, fork_tests;
    int timeout_s;
} conf_args;

static void conf_usage(FILE *f)
{
    fprintf(f,
        "Usage: convgate conformance DIR [OPTIONS]\n"
        "\n"
        "Runs ONNX backend tests on the reference runtime. DIR is one test directory\n"
        "(model.onnx + test_data_set_N/input_K.pb, output_K.pb) or a directory of them,\n"
        "e.g. /usr/share/libonnx-testdata/data/node. Tests are named SUITE/TEST, SUITE\n"
        "being the name of the directory that holds them.\n"
        "\n"
        "Each output is compared with |got - expected| <= 1e-7 + 1e-3 * |expected|;\n"
        "dtype and shape must match exactly, NaN matches only NaN, strings compare\n"
        "exactly, sequences and optionals element by element. Each test runs in its\n"
        "own process with a timeout: a crash or hang is a FAIL naming the signal.\n"
        "\n"
        "Prints 'PASS name', 'FAIL name: reason' or 'SKIP name: reason' per test and\n"
        "ends with 'N passed, N failed, N skipped'.\n"
        "\n"
        "Options:\n"
        "  --filter SUBSTR        run only tests whose name contains SUBSTR\n"
        "  --json                 print {passed, failed, skipped, tests:[{name, status,\n"
        "                         reason}], deviations:[...]} instead of text\n"
        "  --expect FILE          compare with the manifest FILE: lines\n"
        "                         'SUITE/TEST<TAB>fail|skip<TAB>reason' list the tests not\n"
        "                         expected to pass ('#' starts a comment). Exit 1 on any\n"
        "                         deviation: an unlisted failure, a listed test that\n"
        "                         passes, a status other than the listed one, or a listed\n"
        "                         test of this suite that no longer exists\n"
        "  --update-expect FILE   write the current failures and skips to FILE, keeping\n"
        "                         the reasons of lines already there (new lines get\n"
        "                         'TODO') and the lines of tests this run did not cover\n"
        "  --timeout SECONDS      per-test wall-clock limit (default 20)\n"
        "  --no-fork              run tests in this process (for debuggers; a crash\n"
        "                         ends the run)\n"
        "  --verbose              also print each test's run time\n"
        "\n"
        "Exit status: 0 all tests passed (or, with --expect, no deviation), 1 a test\n"
        "failed (or deviated), 2 usage or I/O error.\n");
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

static bool is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static bool is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
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
    for (; src && *src && n + 1 < CONF_REASON_MAX; src++)
        dst[n++] = (*src == '\n' || *src == '\r' || *src == '\t') ? ' ' : *src;
    dst[n] = '\0';
}

/* printf into a reason (one line, truncated). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void reasonf(char *dst, const char *fmt, ...)
{
    char buf[4 * CONF_REASON_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    set_reason(dst, buf);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the entries of dir whose names start with prefix and
 * that satisfy keep(dir/name); NULL-terminated, malloc'd. */
static char **list_dir(const char *dir, const char *prefix, bool (*keep)(const char *),
                       size_t *count)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    *count = 0;
    if (!d)
        return NULL;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char *full = path_join(dir, e->d_name);
        bool ok = full && keep(full);
        free(full);
        if (!ok)
            continue;
        if (n + 1 >= cap) {
            size_t nc = cap ? cap * 2 : 64;
            char **grown = realloc(names, nc * sizeof *names);
            if (!grown)
                break;
            names = grown;
            cap = nc;
        }
        names[n] = strdup(e->d_name);
        if (names[n])
            n++;
    }
    closedir(d);
    if (names) {
        qsort(names, n, sizeof *names, cmp_str);
        names[n] = NULL;
    }
    *count = n;
    return names;
}

static void free_list(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

static bool has_model(const char *dir)
{
    char *m = path_join(dir, "model.onnx");
    bool ok = m && is_file(m);
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

/* Runs every data set of one test; writes status and reason. Runs in the
 * child process (or in-process with --no-fork). */
static conf_status run_test(const char *dir, char *reason)
{
    conf_status result = CONF_FAIL;
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
        return CONF_FAIL;
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
    sets = list_dir(dir, "test_data_set_", is_dir, &set_count);
    if (set_count == 0) {
        set_reason(reason, "no test_data_set_N directories");
        result = CONF_SKIP;
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
    for (size_t i = 0; i < g->input_count; i++) {
        bool init = false;
        for (size_t k = 0; k < g->initializer_count && !init; k++)
            init = g->initializers[k].name && g->inputs[i].name &&
                   strcmp(g->initializers[k].name, g->inputs[i].name) == 0;
        if (!init)
            feedable[feed_count++] = &g->inputs[i];
    }

    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    ro.max_alloc_bytes = CONF_MAX_ALLOC;
    if (cg_runtime_init(model, &ro, &rt, &err) != CG_OK) {
        reasonf(reason, "init: %s", err.msg);
        goto done;
    }

    result = CONF_PASS;
    for (size_t s = 0; s < set_count && result == CONF_PASS; s++) {
        char *set_dir = path_join(dir, sets[s]);
        cg_named_value *ins = calloc(feed_count + 1, sizeof *ins);
        cg_named_value *outs = NULL;
        size_t in_count = 0, out_count = 0;
        if (!set_dir || !ins) {
            set_reason(reason, "out of memory");
            result = CONF_FAIL;
            goto next_set;
        }
        for (size_t k = 0;; k++) {
            char file[64];
            snprintf(file, sizeof file, "input_%zu.pb", k);
            char *p = path_join(set_dir, file);
            if (!p || !is_file(p)) {
                free(p);
                break;
            }
            if (k >= feed_count) {
                reasonf(reason, "%s has %s but the model has only %zu inputs to feed",
                         sets[s], file, feed_count);
                free(p);
                result = CONF_FAIL;
                goto next_set;
            }
            cg_value *v = NULL;
            cg_error_clear(&err);
            cg_status st = cg_io_pb_load(p, feedable[k]->type, CONF_MAX_ALLOC, &v, &err);
            free(p);
            if (st != CG_OK) {
                reasonf(reason, "%s/%s: %s", sets[s], file, err.msg);
                result = st == CG_UNSUPPORTED ? CONF_SKIP : CONF_FAIL;
                goto next_set;
            }
            bf16_quirk(v, feedable[k]->type);
            ins[in_count].name = feedable[k]->name;
            ins[in_count++].value = v;
        }
        cg_error_clear(&err);
        if (cg_runtime_run(rt, ins, in_count, &outs, &out_count, &err) != CG_OK) {
            reasonf(reason, "%s: run: %s", sets[s], err.msg);
            result = CONF_FAIL;
            goto next_set;
        }
        for (size_t k = 0;; k++) {
            char file[64];
            snprintf(file, sizeof file, "output_%zu.pb", k);
            char *p = path_join(set_dir, file);
            if (!p || !is_file(p)) {
                free(p);
                if (k == 0) {
                    reasonf(reason, "%s has no output_0.pb", sets[s]);
                    result = CONF_SKIP;
                }
                break;
            }
            if (k >= out_count || k >= g->output_count) {
                reasonf(reason, "%s has %s but the run produced %zu outputs", sets[s],
                         file, out_count);
                free(p);
                result = CONF_FAIL;
                break;
            }
            cg_value *want = NULL;
            cg_error_clear(&err);
            cg_status st = cg_io_pb_load(p, g->outputs[k].type, CONF_MAX_ALLOC, &want, &err);
            free(p);
            if (st != CG_OK) {
                reasonf(reason, "%s/%s: %s", sets[s], file, err.msg);
                result = st == CG_UNSUPPORTED ? CONF_SKIP : CONF_FAIL;
                break;
            }
            bf16_quirk(want, g->outputs[k].type);
            char why[CONF_REASON_MAX];
            bool same = cg_io_values_match(outs[k].value, want, CONF_RTOL, CONF_ATOL, why,
                                           sizeof why);
            cg_value_free(want);
            if (!same) {
                reasonf(reason, "%s output '%s': %s", sets[s],
                         g->outputs[k].name ? g->outputs[k].name : "", why);
                result = CONF_FAIL;
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
    free_list(sets, set_count);
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
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Runs one test in a forked child with a timeout. */
static void run_isolated(conf_test *t, int timeout_s)
{
    int fds[2];
    char buf[CONF_REASON_MAX + 8];
    size_t got = 0;
    if (pipe(fds) != 0) {
        t->status = CONF_FAIL;
        set_reason(t->reason, "harness: pipe failed");
        return;
    }
    fflush(NULL); /* the child must not flush our buffered output again */
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        t->status = CONF_FAIL;
        set_reason(t->reason, "harness: fork failed");
        return;
    }
    if (pid == 0) {
        char reason[CONF_REASON_MAX];
        reason[0] = '\0';
        close(fds[0]);
        conf_status st = run_test(t->dir, reason);
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
        t->status = CONF_FAIL;
        snprintf(t->reason, sizeof t->reason, "timed out after %d s (killed)", timeout_s);
    } else if (WIFSIGNALED(wst)) {
        t->status = CONF_FAIL;
        snprintf(t->reason, sizeof t->reason, "crashed: %s (signal %d)",
                 signal_name(WTERMSIG(wst)), WTERMSIG(wst));
    } else if (got == 0 || !strchr("PFS", buf[0])) {
        t->status = CONF_FAIL;
        snprintf(t->reason, sizeof t->reason, "harness: the test process exited with status %d "
                 "without a result", WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
    } else {
        t->status = buf[0] == 'P' ? CONF_PASS : buf[0] == 'F' ? CONF_FAIL : CONF_SKIP;
        set_reason(t->reason, buf + 1);
    }
}

/* --- manifest --------------------------------------------------------------------------- */

static void manifest_free(conf_manifest *m)
{
    for (size_t i = 0; i < m->count; i++) {
        free(m->entries[i].name);
        free(m->entries[i].reason);
    }
    free(m->entries);
    free(m->header);
    memset(m, 0, sizeof *m);
}

static conf_entry *manifest_find(conf_manifest *m, const char *name)
{
    for (size_t i = 0; i < m->count; i++)
        if (strcmp(m->entries[i].name, name) == 0)
            return &m->entries[i];
    return NULL;
}

/* Reads a manifest. missing_ok: a file that does not exist is an empty one. */
static bool manifest_load(const char *path, bool missing_ok, conf_manifest *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (missing_ok && errno == ENOENT)
            return true;
        cli_error("conformance", "cannot open manifest '%s': %s", path, strerror(errno));
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
            cli_error("conformance", "%s:%u: expected 'SUITE/TEST<TAB>fail|skip<TAB>reason'",
                      path, lineno);
            ok = false;
            break;
        }
        *tab1 = '\0';
        if (tab2)
            *tab2 = '\0';
        const char *word = tab1 + 1;
        conf_status st;
        if (strcmp(word, "fail") == 0)
            st = CONF_FAIL;
        else if (strcmp(word, "skip") == 0)
            st = CONF_SKIP;
        else {
            cli_error("conformance", "%s:%u: status must be 'fail' or 'skip', not '%s'", path,
                      lineno, word);
            ok = false;
            break;
        }
        if (!strchr(line, '/')) {
            cli_error("conformance", "%s:%u: test name '%s' needs a suite ('node/%s')", path,
                      lineno, line, line);
            ok = false;
            break;
        }
        if (manifest_find(m, line)) {
            cli_error("conformance", "%s:%u: '%s' is listed twice", path, lineno, line);
            ok = false;
            break;
        }
        if (m->count == cap_entries) {
            size_t nc = cap_entries ? cap_entries * 2 : 256;
            conf_entry *grown = realloc(m->entries, nc * sizeof *grown);
            if (!grown) {
                ok = false;
                break;
            }
            m->entries = grown;
            cap_entries = nc;
        }
        conf_entry *e = &m->entries[m->count];
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
    if (!ok)
        manifest_free(m);
    return ok;
}

typedef struct conf_line {
    const char *name;
    conf_status status;
    const char *reason;
} conf_line;

static int cmp_line(const void *a, const void *b)
{
    return strcmp(((const conf_line *)a)->name, ((const conf_line *)b)->name);
}

/* Writes the manifest for --update-expect: every non-passing test of this
 * run, plus the old lines for tests this run did not cover. */
static bool manifest_update(const char *path, const conf_test *tests, size_t count)
{
    conf_manifest old;
    if (!manifest_load(path, true, &old))
        return false;
    conf_line *lines = calloc(count + old.count + 1, sizeof *lines);
    size_t n = 0;
    bool ok = lines != NULL;
    for (size_t i = 0; ok && i < count; i++) {
        conf_entry *e = manifest_find(&old, tests[i].name);
        if (e)
            e->seen = true;
        if (tests[i].status == CONF_PASS)
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
    char *tmp = NULL;
    FILE *f = NULL;
    if (ok) {
        qsort(lines, n, sizeof *lines, cmp_line);
        tmp = malloc(strlen(path) + 8);
        ok = tmp != NULL;
    }
    if (ok) {
        sprintf(tmp, "%s.tmp", path);
        f = fopen(tmp, "w");
        if (!f)
            cli_error("conformance", "cannot write '%s': %s", tmp, strerror(errno));
        ok = f != NULL;
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
            fprintf(f, "%s\t%s\t%s\n", lines[i].name, status_word[lines[i].status],
                    lines[i].reason);
        ok = fclose(f) == 0;
        if (ok && rename(tmp, path) != 0) {
            cli_error("conformance", "cannot replace '%s': %s", path, strerror(errno));
            ok = false;
        }
        if (!ok)
            remove(tmp);
    }
    free(tmp);
    free(lines);
    manifest_free(&old);
    return ok;
}

/* --- command ------------------------------------------------------------------------------- */

static int parse_args(int argc, char **argv, conf_args *a)
{
    a->fork_tests = true;
    a->timeout_s = 20;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            conf_usage(stdout);
            return -1;
        } else if (!strcmp(arg, "--json")) {
            a->json = true;
        } else if (!strcmp(arg, "--verbose") || !strcmp(arg, "-v")) {
            a->verbose = true;
        } else if (!strcmp(arg, "--no-fork")) {
            a->fork_tests = false;
        } else if (!strcmp(arg, "--filter") || !strcmp(arg, "--expect") ||
                   !strcmp(arg, "--update-expect") || !strcmp(arg, "--timeout")) {
            if (!val) {
                cli_error("conformance", "%s needs a value", arg);
                return CG_EXIT_ERROR;
            }
            i++;
            if (!strcmp(arg, "--filter"))
                a->filter = val;
            else if (!strcmp(arg, "--expect"))
                a->expect = val;
            else if (!strcmp(arg, "--update-expect"))
                a->update = val;
            else {
                char *end;
                long s = strtol(val, &end, 10);
                if (*end || s <= 0 || s > 86400) {
                    cli_error("conformance", "--timeout needs seconds in 1..86400");
                    return CG_EXIT_ERROR;
                }
                a->timeout_s = (int)s;
            }
        } else if (arg[0] == '-' && arg[1]) {
            cli_error("conformance", "unknown option '%s' (see convgate conformance --help)",
                      arg);
            return CG_EXIT_ERROR;
        } else if (a->dir) {
            cli_error("conformance", "more than one directory given");
            return CG_EXIT_ERROR;
        } else {
            a->dir = arg;
        }
    }
    if (!a->dir) {
        conf_usage(stderr);
        return CG_EXIT_ERROR;
    }
    return CG_EXIT_OK;
}

/* Collects the tests under a->dir (or a->dir itself) that match the filter. */
static bool collect_tests(const conf_args *a, conf_test **out, size_t *out_count,
                          char *suite, size_t suite_cap)
{
    char **names = NULL;
    size_t n = 0;
    conf_test *tests = NULL;
    char parent[4096];
    *out = NULL;
    *out_count = 0;
    if (!is_dir(a->dir)) {
        cli_error("conformance", "'%s' is not a directory", a->dir);
        return false;
    }
    bool single = has_model(a->dir);
    if (single) {
        /* DIR is one test: its suite is the directory above it. */
        snprintf(parent, sizeof parent, "%s/..", a->dir);
        char *real = realpath(parent, NULL);
        base_name(real ? real : "tests", suite, suite_cap);
        free(real);
        n = 1;
    } else {
        char *real = realpath(a->dir, NULL);
        base_name(real ? real : a->dir, suite, suite_cap);
        free(real);
        names = list_dir(a->dir, "", has_model, &n);
        if (n == 0) {
            free_list(names, n);
            cli_error("conformance", "no tests in '%s': expected DIR/model.onnx or "
                      "DIR/*/model.onnx", a->dir);
            return false;
        }
    }
    tests = calloc(n ? n : 1, sizeof *tests);
    if (!tests) {
        free_list(names, n);
        cli_error("conformance", "out of memory");
        return false;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        char test_name[1024], full[2048];
        if (single) {
            char *real = realpath(a->dir, NULL);
            base_name(real ? real : a->dir, test_name, sizeof test_name);
            free(real);
        } else {
            snprintf(test_name, sizeof test_name, "%s", names[i]);
        }
        snprintf(full, sizeof full, "%s/%s", suite, test_name);
        if (a->filter && !strstr(full, a->filter))
            continue;
        tests[kept].name = strdup(full);
        tests[kept].dir = single ? strdup(a->dir) : path_join(a->dir, names[i]);
        if (!tests[kept].name || !tests[kept].dir) {
            free(tests[kept].name);
            free(tests[kept].dir);
            continue;
        }
        kept++;
    }
    free_list(names, n);
    if (kept == 0 && a->filter)
        cli_error("conformance", "no test name contains '%s'", a->filter);
    *out = tests;
    *out_count = kept;
    return true;
}

int cmd_conformance(int argc, char **argv)
{
    conf_args a;
    conf_manifest manifest;
    conf_test *tests = NULL;
    size_t count = 0;
    char suite[512];
    char **deviations = NULL;
    size_t dev_count = 0;
    int rc = CG_EXIT_ERROR;
    json_t *jroot = NULL;
    memset(&a, 0, sizeof a);
    memset(&manifest, 0, sizeof manifest);
    int prc = parse_args(argc, argv, &a);
    if (prc != CG_EXIT_OK)
        return prc < 0 ? CG_EXIT_OK : prc;
    if (a.expect && !manifest_load(a.expect, false, &manifest))
        return CG_EXIT_ERROR;
    if (!collect_tests(&a, &tests, &count, suite, sizeof suite))
        goto done;

    bool progress = !a.json && isatty(STDERR_FILENO) && count > 1;
    size_t passed = 0, failed = 0, skipped = 0;
    for (size_t i = 0; i < count; i++) {
        conf_test *t = &tests[i];
        if (progress) {
            fprintf(stderr, "\r\033[K[%zu/%zu] %s", i + 1, count, t->name);
            fflush(stderr);
        }
        double t0 = now_ms();
        if (a.fork_tests) {
            run_isolated(t, a.timeout_s);
        } else {
            t->reason[0] = '\0';
            t->status = run_test(t->dir, t->reason);
        }
        t->ms = now_ms() - t0;
        passed += t->status == CONF_PASS;
        failed += t->status == CONF_FAIL;
        skipped += t->status == CONF_SKIP;
        if (!a.json) {
            if (progress)
                fputs("\r\033[K", stderr);
            if (t->status == CONF_PASS)
                printf("PASS %s", t->name);
            else
                printf("%s %s: %s", status_label[t->status], t->name, t->reason);
            if (a.verbose)
                printf("  (%.1f ms)", t->ms);
            printf("\n");
            fflush(stdout);
        }
    }
    if (progress)
        fputs("\r\033[K", stderr);

    /* Deviations from the manifest, in both directions. */
    deviations = calloc(count + manifest.count + 1, sizeof *deviations);
    if (!deviations) {
        cli_error("conformance", "out of memory");
        goto done;
    }
    if (a.expect) {
        for (size_t i = 0; i < count; i++) {
            const conf_test *t = &tests[i];
            conf_entry *e = manifest_find(&manifest, t->name);
            char line[CONF_REASON_MAX + 1200];
            line[0] = '\0';
            if (e)
                e->seen = true;
            if (!e && t->status != CONF_PASS)
                snprintf(line, sizeof line, "unexpected %s: %s: %s", status_word[t->status],
                         t->name, t->reason);
            else if (e && t->status == CONF_PASS)
                snprintf(line, sizeof line, "unexpected pass: %s (listed as %s: remove it from "
                         "the manifest)", t->name, status_word[e->status]);
            else if (e && e->status != t->status)
                snprintf(line, sizeof line, "unexpected %s: %s (listed as %s): %s",
                         status_word[t->status], t->name, status_word[e->status], t->reason);
            if (line[0])
                deviations[dev_count++] = strdup(line);
        }
        /* A listed test of this suite that is gone is stale (only when the
         * whole suite ran: a filter or a single test covers part of it). */
        bool whole_suite = !a.filter && !has_model(a.dir);
        size_t suite_len = strlen(suite);
        for (size_t i = 0; whole_suite && i < manifest.count; i++) {
            const conf_entry *e = &manifest.entries[i];
            if (e->seen || strncmp(e->name, suite, suite_len) != 0 || e->name[suite_len] != '/')
                continue;
            char line[1200];
            snprintf(line, sizeof line, "stale manifest entry: %s (no such test)", e->name);
            deviations[dev_count++] = strdup(line);
        }
    }

    if (a.json) {
        jroot = json_object();
        json_t *arr = json_array(), *devs = json_array();
        cg_json_set(jroot, "passed", json_integer((json_int_t)passed));
        cg_json_set(jroot, "failed", json_integer((json_int_t)failed));
        cg_json_set(jroot, "skipped", json_integer((json_int_t)skipped));
        for (size_t i = 0; i < count; i++) {
            json_t *o = json_object();
            cg_json_set(o, "name", cg_json_text(tests[i].name));
            cg_json_set(o, "status", json_string(status_word[tests[i].status]));
            cg_json_set(o, "reason", cg_json_text(tests[i].reason));
            cg_json_set(o, "ms", cg_json_number(tests[i].ms));
            json_array_append_new(arr, o);
        }
        cg_json_set(jroot, "tests", arr);
        for (size_t i = 0; i < dev_count; i++)
            if (deviations[i])
                json_array_append_new(devs, cg_json_text(deviations[i]));
        cg_json_set(jroot, "deviations", a.expect ? devs : (json_decref(devs), json_null()));
    } else {
        if (dev_count) {
            printf("\n%zu deviation%s from %s:\n", dev_count, dev_count == 1 ? "" : "s",
                   a.expect);
            for (size_t i = 0; i < dev_count; i++)
                printf("  %s\n", deviations[i] ? deviations[i] : "(out of memory)");
            printf("\n");
        }
        printf("%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
    }
    if (a.update && !manifest_update(a.update, tests, count))
        goto done;
    if (a.expect)
        rc = dev_count ? CG_EXIT_FAIL : CG_EXIT_OK;
    else
        rc = failed ? CG_EXIT_FAIL : CG_EXIT_OK;
    if (jroot) {
        rc = cli_json_emit(rc, jroot);
        jroot = NULL;
    }
done:
    json_decref(jroot);
    for (size_t i = 0; deviations && i < dev_count; i++)
        free(deviations[i]);
    free(deviations);
    for (size_t i = 0; i < count; i++) {
        free(tests[i].name);
        free(tests[i].dir);
    }
    free(tests);
    manifest_free(&manifest);
    return rc;
}
