/*
 * Freezing a model's reference outputs as a golden set (convgate/golden.h):
 * the one loop dump-ref, convert and the bindings share. Each sample runs
 * on the reference (with floors, on the float64, fp32 and fp16-storage
 * references: cg_golden_writer_run), its inputs and outputs are written,
 * then the manifest. A run that fails marks the model as failed (the
 * check's failure), apart from a bad input or a writer error.
 */
#include <stdlib.h>
#include <string.h>

#include "convgate/golden.h"
#include "convgate/noise.h"
#include "verify_internal.h"

void cg_golden_dump_report_free(cg_golden_dump_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->set_count; i++)
        free(r->sets[i].name);
    free(r->sets);
    memset(r, 0, sizeof *r);
}

static cg_status dump_record(cg_golden_dump_report *r, const char *name, size_t inputs,
                             size_t outputs, cg_error *err)
{
    cg_golden_dump_set *grown = realloc(r->sets, (r->set_count + 1) * sizeof *grown);
    if (!grown)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    r->sets = grown;
    cg_golden_dump_set *s = &r->sets[r->set_count];
    if (!(s->name = strdup(name ? name : "")))
        return cg_error_set(err, CG_NOMEM, "out of memory");
    s->inputs = inputs;
    s->outputs = outputs;
    r->set_count++;
    return CG_OK;
}

cg_status cg_golden_dump(const cg_model *model, cg_sample_source *src, const char *dir,
                         const cg_golden_dump_options *opt, cg_golden_dump_report *out,
                         cg_error *err)
{
    const cg_model *run_model = opt->run_model ? opt->run_model : model;
    cg_runtime *rt = NULL;
    cg_noise *noise = NULL;
    cg_golden_writer *w = NULL;
    cg_sample s;
    cg_status st = CG_OK;
    memset(out, 0, sizeof *out);
    memset(&s, 0, sizeof s);
    bool plain = !opt->floors; /* the fp32 reference alone, no floors */
    if (opt->floors) {
        cg_noise_options no;
        memset(&no, 0, sizeof no);
        no.fp16 = true;
        no.fp16_sums = true; /* the floor of devices that sum in fp16 */
        no.max_alloc_bytes = opt->max_alloc_bytes;
        st = cg_noise_init(run_model, &no, &noise, err);
        if (st == CG_UNSUPPORTED && opt->floors_optional) {
            cg_error_clear(err);
            plain = true;
        }
    }
    if (plain) {
        cg_runtime_options ro;
        cg_verify_runtime_options(&ro, opt->max_alloc_bytes, 0);
        st = cg_runtime_init(run_model, &ro, &rt, err);
    }
    if (st != CG_OK) {
        out->model_failed = st == CG_UNSUPPORTED || st == CG_RUNTIME;
        goto done;
    }
    if ((st = cg_golden_writer_init(dir, opt->model_path, model, opt->force, &w, err)) != CG_OK)
        goto done;
    if (opt->created)
        cg_golden_writer_set_created(w, opt->created);
    for (size_t i = 0; i < cg_sample_source_count(src); i++) {
        const char *written = NULL;
        size_t outputs = 0;
        bool ran = false;
        if ((st = cg_sample_source_load(src, i, &s, err)) != CG_OK)
            goto done;
        st = cg_golden_writer_run(w, rt, noise, &s, &written, &outputs, &ran, err);
        if (st != CG_OK) {
            /* the model failing on the set; a bad input or the writer is not */
            out->model_failed = !ran && st != CG_USAGE;
            goto done;
        }
        if ((st = dump_record(out, written, s.input_count, outputs, err)) != CG_OK)
            goto done;
        if (opt->on_set)
            opt->on_set(opt->user, written, s.input_count, outputs);
        cg_sample_clear(&s);
    }
    st = cg_golden_writer_finish(w, err);
done:
    cg_sample_clear(&s);
    cg_golden_writer_free(w);
    cg_runtime_free(rt);
    cg_noise_free(noise);
    return st;
}
