/*
 * convgate dump-ref: run a model on the reference CPU runtime over input
 * sets (a directory of sets, or seeded random ones) and freeze inputs and
 * outputs as a golden set (convgate/golden.h) that `convgate verify` and
 * `convgate gate --golden` check targets against later.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/golden.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"

#define DUMP_MAX_DIMS 64
#define DUMP_MAX_RANDOM 100000

static void dump_usage(FILE *f)
{
    fputs("Usage: convgate dump-ref MODEL (--inputs DIR | --random N [--seed S]) -o GOLDEN\n"
          "                         [--dim SYMBOL=VALUE]... [--force]\n"
          "\n"
          "Runs MODEL on the reference CPU runtime and writes a versioned golden set:\n"
          "GOLDEN/manifest.json (format_version, convgate version, the model's sha256,\n"
          "each file's sha256, dtype and shape) and GOLDEN/<set>/{inputs,outputs}/*.npy.\n"
          "\n"
          "  --inputs DIR          input sets: DIR/<set>/<input>.npy (or .pb), or\n"
          "                        DIR/<set>.npz holding one array per input; a set must\n"
          "                        feed every graph input, and nothing else\n"
          "  --random N            N sets of seeded random inputs instead (floats uniform\n"
          "                        in [-1, 1)); symbolic dimensions need --dim\n"
          "  --seed S              seed for --random (default 0)\n"
          "  --dim SYMBOL=VALUE    size of a symbolic dimension for --random\n"
          "  -o, --output GOLDEN   the golden directory (created; a non-empty one is\n"
          "                        refused unless --force)\n"
          "  --force               write into a non-empty GOLDEN (its old manifest is\n"
          "                        removed first)\n"
          "\n"
          "File names keep only [A-Za-z0-9._-] of tensor and set names.\n"
          "Exit status: 0 written; 1 the model failed while running; 2 usage or input error.\n",
          f);
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static bool is_initializer(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].name && strcmp(g->initializers[i].name, name) == 0)
            return true;
    return false;
}

/* A fed tensor must have the declared dtype and every fixed dimension. */
static bool check_input(const cg_value_info *vi, const char *set, const cg_value *v)
{
    const cg_type *t = vi->type;
    if (v->kind != CG_VALUE_TENSOR) {
        cli_error("dump-ref", "set '%s': input '%s' is not a tensor", set, vi->name);
        return false;
    }
    if (!t || t->kind != CG_TYPE_TENSOR)
        return true;
    if (t->has_elem_type && (int)v->tensor.dtype != t->elem_type) {
        cli_error("dump-ref", "set '%s': input '%s' holds %s, the model expects %s", set,
                  vi->name, cg_dtype_name(v->tensor.dtype),
                  cg_dtype_name((cg_dtype)t->elem_type));
        return false;
    }
    if (!t->shape)
        return true;
    if ((size_t)v->tensor.rank != t->shape->rank) {
        cli_error("dump-ref", "set '%s': input '%s' has rank %d, the model expects %zu", set,
                  vi->name, v->tensor.rank, t->shape->rank);
        return false;
    }
    for (size_t d = 0; d < t->shape->rank; d++)
        if (t->shape->dims[d].has_value && t->shape->dims[d].value != v->tensor.dims[d]) {
            cli_error("dump-ref", "set '%s': input '%s' dimension %zu is %" PRId64
                      ", the model expects %" PRId64, set, vi->name, d, v->tensor.dims[d],
                      t->shape->dims[d].value);
            return false;
        }
    return true;
}

/* A random tensor for vi from its declared type and the --dim bindings. */
static bool random_input(const cg_value_info *vi, const cg_dim_binding *dims, size_t dim_count,
                         cg_rng *rng, cg_value **out)
{
    const cg_type *t = vi->type;
    int64_t shape[CG_MAX_RANK];
    cg_tensor tensor;
    cg_error err;
    cg_error_clear(&err);
    memset(&tensor, 0, sizeof tensor);
    if (!t || t->kind != CG_TYPE_TENSOR || !t->has_elem_type || !t->shape) {
        cli_error("dump-ref", "input '%s' has no declared tensor type and shape: --random "
                  "cannot fill it; use --inputs", vi->name);
        return false;
    }
    if (t->shape->rank > CG_MAX_RANK) {
        cli_error("dump-ref", "input '%s' has rank %zu, above %d", vi->name, t->shape->rank,
                  CG_MAX_RANK);
        return false;
    }
    for (size_t d = 0; d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        if (dim->has_value) {
            if (dim->value < 0) {
                cli_error("dump-ref", "input '%s' dimension %zu is negative", vi->name, d);
                return false;
            }
            shape[d] = dim->value;
            continue;
        }
        size_t k = 0;
        while (dim->param && k < dim_count && strcmp(dims[k].symbol, dim->param) != 0)
            k++;
        if (!dim->param || k == dim_count) {
            cli_error("dump-ref", "input '%s': dimension %zu ('%s') has no size; give --dim "
                      "%s=SIZE", vi->name, d, dim->param ? dim->param : "?",
                      dim->param ? dim->param : "SYMBOL");
            return false;
        }
        shape[d] = dims[k].value;
    }
    if (cg_tensor_alloc(&tensor, (cg_dtype)t->elem_type, (int)t->shape->rank, shape, 0,
                           &err) != CG_OK ||
        cg_io_random_fill(&tensor, rng, &err) != CG_OK ||
        cg_value_from_tensor(&tensor, out, &err) != CG_OK) {
        cg_tensor_release(&tensor);
        cli_error("dump-ref", "input '%s': %s", vi->name, err.msg);
        return false;
    }
    return true;
}

int cmd_dump_ref(int argc, char **argv)
{
    static const struct option longopts[] = {{"inputs", required_argument, NULL, 'i'},
                                              {"random", required_argument, NULL, 'r'},
                                              {"seed", required_argument, NULL, 's'},
                                              {"dim", required_argument, NULL, 'd'},
                                              {"output", required_argument, NULL, 'o'},
                                              {"force", no_argument, NULL, 'f'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    const char *inputs_dir = NULL, *golden_dir = NULL;
    uint64_t random_count = 0, seed = 0;
    bool random_given = false, force = false;
    cg_dim_binding dims[DUMP_MAX_DIMS];
    char *dim_names[DUMP_MAX_DIMS];
    size_t dim_count = 0, set_count = 0, input_count = 0, out_count = 0;
    int rc = CG_EXIT_ERROR, c;
    cg_model *model = NULL;
    cg_runtime *rt = NULL;
    cg_golden_writer *w = NULL;
    char **sets = NULL;
    const char **names = NULL;
    const cg_value_info **infos = NULL;
    cg_value **values = NULL;
    cg_named_value *ins = NULL, *outs = NULL;
    cg_error err;
    cg_error_clear(&err);

    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'i': inputs_dir = optarg; break;
        case 'o': golden_dir = optarg; break;
        case 'f': force = true; break;
        case 'r':
            if (!parse_u64(optarg, &random_count) || random_count == 0 ||
                random_count > DUMP_MAX_RANDOM) {
                cli_error("dump-ref", "--random needs a set count from 1 to %d",
                          DUMP_MAX_RANDOM);
                goto done;
            }
            random_given = true;
            break;
        case 's':
            if (!parse_u64(optarg, &seed)) {
                cli_error("dump-ref", "--seed needs a non-negative integer");
                goto done;
            }
            break;
        case 'd': {
            const char *eq = strchr(optarg, '=');
            uint64_t v;
            if (!eq || eq == optarg || !parse_u64(eq + 1, &v) || v > (uint64_t)INT64_MAX) {
                cli_error("dump-ref", "--dim needs SYMBOL=VALUE with VALUE >= 0");
                goto done;
            }
            if (dim_count == DUMP_MAX_DIMS) {
                cli_error("dump-ref", "more than %d --dim options", DUMP_MAX_DIMS);
                goto done;
            }
            if (!(dim_names[dim_count] = malloc((size_t)(eq - optarg) + 1))) {
                cli_error("dump-ref", "out of memory");
                goto done;
            }
            memcpy(dim_names[dim_count], optarg, (size_t)(eq - optarg));
            dim_names[dim_count][eq - optarg] = '\0';
            dims[dim_count].symbol = dim_names[dim_count];
            dims[dim_count++].value = (int64_t)v;
            break;
        }
        case 'h': dump_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: dump_usage(stderr); goto done;
        }
    }
    if (optind + 1 != argc) {
        cli_error("dump-ref", optind >= argc ? "no model given" : "one model at a time");
        dump_usage(stderr);
        goto done;
    }
    if (!golden_dir) {
        cli_error("dump-ref", "-o GOLDEN is required");
        goto done;
    }
    if (!inputs_dir == !random_given) {
        cli_error("dump-ref", "give exactly one of --inputs DIR and --random N");
        goto done;
    }
    const char *model_path = argv[optind];
    if (strcmp(model_path, "-") == 0) {
        cli_error("dump-ref", "the model must be a file (its sha256 goes into the manifest)");
        goto done;
    }
    if ((model = cli_load_model("dump-ref", model_path, NULL)) == NULL)
        goto done;
    const cg_graph *g = model->graph;
    if (!g) {
        cli_error("dump-ref", "'%s' has no graph", model_path);
        goto done;
    }

    /* the graph inputs a set must feed: those without an initializer */
    names = calloc(g->input_count + 1, sizeof *names);
    infos = calloc(g->input_count + 1, sizeof *infos);
    values = calloc(g->input_count + 1, sizeof *values);
    ins = calloc(g->input_count + 1, sizeof *ins);
    if (!names || !infos || !values || !ins) {
        cli_error("dump-ref", "out of memory");
        goto done;
    }
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].name && !is_initializer(g, g->inputs[i].name)) {
            infos[input_count] = &g->inputs[i];
            names[input_count++] = g->inputs[i].name;
        }

    if (inputs_dir) {
        if (cg_golden_list_sets(inputs_dir, &sets, &set_count, &err) != CG_OK) {
            cli_error("dump-ref", "%s", err.msg);
            goto done;
        }
    } else {
        set_count = (size_t)random_count;
    }

    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    if (cg_runtime_init(model, &ro, &rt, &err) != CG_OK) {
        cli_error("dump-ref", "%s", err.msg);
        rc = err.status == CG_UNSUPPORTED || err.status == CG_RUNTIME ? CG_EXIT_FAIL
                                                                      : CG_EXIT_ERROR;
        goto done;
    }
    if (cg_golden_writer_init(golden_dir, model_path, model, force, &w, &err) != CG_OK) {
        cli_error("dump-ref", "%s", err.msg);
        goto done;
    }

    cg_rng rng;
    cg_rng_seed(&rng, seed);
    for (size_t s = 0; s < set_count; s++) {
        char label[64];
        const char *set_name = sets ? sets[s] : label;
        const char *written = NULL;
        snprintf(label, sizeof label, "random_%zu", s);
        if (sets) {
            if (cg_golden_read_set(inputs_dir, set_name, names, input_count, true, 0, values,
                                   &err) != CG_OK) {
                cli_error("dump-ref", "%s", err.msg);
                goto done;
            }
            for (size_t i = 0; i < input_count; i++)
                if (!check_input(infos[i], set_name, values[i]))
                    goto done;
        } else {
            for (size_t i = 0; i < input_count; i++)
                if (!random_input(infos[i], dims, dim_count, &rng, &values[i]))
                    goto done;
        }
        for (size_t i = 0; i < input_count; i++) {
            ins[i].name = names[i];
            ins[i].value = values[i];
        }
        if (cg_runtime_run(rt, ins, input_count, &outs, &out_count, &err) != CG_OK) {
            cli_error("dump-ref", "set '%s': %s", set_name, err.msg);
            rc = err.status == CG_USAGE ? CG_EXIT_ERROR : CG_EXIT_FAIL;
            goto done;
        }
        if (cg_golden_writer_add(w, set_name, ins, input_count, outs, out_count, &written,
                                 &err) != CG_OK) {
            cli_error("dump-ref", "%s", err.msg);
            goto done;
        }
        printf("set '%s': %zu input%s, %zu output%s\n", written, input_count,
               input_count == 1 ? "" : "s", out_count, out_count == 1 ? "" : "s");
        cg_runtime_free_outputs(outs, out_count);
        outs = NULL;
        out_count = 0;
        for (size_t i = 0; i < input_count; i++) {
            cg_value_free(values[i]);
            values[i] = NULL;
        }
    }
    if (cg_golden_writer_finish(w, &err) != CG_OK) {
        cli_error("dump-ref", "%s", err.msg);
        goto done;
    }
    printf("wrote %zu set%s to %s/manifest.json\n", set_count, set_count == 1 ? "" : "s",
           golden_dir);
    rc = CG_EXIT_OK;
done:
    if (outs)
        cg_runtime_free_outputs(outs, out_count);
    for (size_t i = 0; values && i < input_count; i++)
        cg_value_free(values[i]);
    free(values);
    free(ins);
    free(infos);
    free(names);
    cg_golden_names_free(sets, sets ? set_count : 0);
    cg_golden_writer_free(w);
    cg_runtime_free(rt);
    cg_model_free(model);
    for (size_t i = 0; i < dim_count; i++)
        free(dim_names[i]);
    return rc;
}
