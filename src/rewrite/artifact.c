/*
 * convgate verify DIR (convgate/rewrite.h): an artifact directory checked
 * against its manifest, then its golden set against its model.
 *
 * Trust: everything in DIR is data from disk. The manifest must be a
 * convgate artifact of a format this version reads; every file it lists
 * must have a safe relative path (no "..", no absolute path, [A-Za-z0-9._-]
 * components), be a regular file reached without following a link (none
 * planted in its place or in place of a folder above it) and have
 * the listed size and sha256; model.onnx must be listed and be the result
 * the manifest names. Any failure is CG_SECURITY (or CG_INVALID for a
 * malformed manifest) naming the file, never a pass. Only then is the
 * model loaded and its golden set compared.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/golden.h"
#include "convgate/rewrite.h"
#include "core/file.h"
#include "io/io_internal.h"
#include "verify/golden_internal.h"

#define ARTIFACT_MANIFEST_MAX ((size_t)64 << 20)
#define ARTIFACT_PATH_MAX 4096

static bool safe_component(const char *s, size_t n)
{
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool safe_path(const char *p)
{
    if (!p || !*p || p[0] == '/' || strlen(p) > 1024)
        return false;
    for (const char *s = p;;) {
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);
        if (!safe_component(s, n))
            return false;
        if (!slash)
            return true;
        s = slash + 1;
    }
}

static const char *get_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

void cg_artifact_report_free(cg_artifact_report *r)
{
    if (!r)
        return;
    free(r->dir);
    free(r->convgate_version);
    free(r->commit);
    free(r->source_sha256);
    free(r->result_sha256);
    cg_verify_report_free(&r->golden);
    cg_model_free(r->model);
    memset(r, 0, sizeof *r);
}

/* Checks one listed file: a regular file of the listed size and hash,
 * reached from dir one component at a time without following a link (a
 * linked folder above it is refused like a link in the file's place), and
 * hashed from the descriptor that was checked. */
static cg_status check_file(const char *dir, json_t *f, size_t i, cg_error *err)
{
    const char *path = get_str(f, "path"), *sha = get_str(f, "sha256");
    json_t *bytes = json_object_get(f, "bytes");
    char hex[CG_SHA256_HEX];
    uint64_t size = 0;
    cg_error local;
    cg_error_clear(&local);
    if (!path || !sha || !json_is_integer(bytes) || json_integer_value(bytes) < 0)
        return cg_error_set(err, CG_INVALID, "artifact '%s': manifest.json files[%zu] needs "
                            "path, sha256 and bytes", dir, i);
    if (!safe_path(path))
        return cg_error_set(err, CG_SECURITY, "artifact '%s': manifest.json lists an unsafe "
                            "path '%s'", dir, path);
    int fd = cg_file_open_beneath(dir, path, path, &local);
    int open_errno = errno;
    if (fd < 0) {
        if (open_errno == ENOENT && local.status != CG_SECURITY)
            return cg_error_set(err, CG_SECURITY, "artifact '%s': '%s' is missing", dir, path);
        return cg_error_set(err, CG_SECURITY, "artifact '%s': '%s' is not a regular file "
                            "reached without a link (%s)", dir, path, local.msg);
    }
    cg_status st = cg_sha256_fd(fd, path, hex, &size, err);
    if (st != CG_OK)
        return st;
    if (size != (uint64_t)json_integer_value(bytes) || strcmp(hex, sha) != 0)
        return cg_error_set(err, CG_SECURITY, "artifact '%s': '%s' was altered: %" PRIu64
                            " bytes, sha256 %s; the manifest says %" PRIu64 " bytes, sha256 %s",
                            dir, path, size, hex, (uint64_t)json_integer_value(bytes), sha);
    return CG_OK;
}

cg_status cg_artifact_verify(const char *dir, const cg_verify_options *opt, cg_artifact_report *out,
                             cg_error *err)
{
    char path[ARTIFACT_PATH_MAX], model_path[ARTIFACT_PATH_MAX], golden[ARTIFACT_PATH_MAX];
    char *buf = NULL;
    size_t size = 0;
    json_error_t jerr;
    json_t *root = NULL;
    cg_status st;
    cg_error local;
    memset(out, 0, sizeof *out);
    cg_error_clear(&local);
    if (!dir || !opt || snprintf(path, sizeof path, "%s/%s", dir, CG_ARTIFACT_MANIFEST) >=
                            (int)sizeof path)
        return cg_error_set(err, CG_USAGE, "verify: an artifact directory is needed");
    if (!(out->dir = strdup(dir)))
        return cg_error_set(err, CG_NOMEM, "out of memory");
    if (cg_file_read_all(path, ARTIFACT_MANIFEST_MAX, &buf, &size, &local) != CG_OK)
        return cg_error_set(err, local.status == CG_LIMIT ? CG_LIMIT : CG_IO,
                            "artifact '%s': no readable manifest.json (%s)", dir, local.msg);
    root = json_loadb(buf, size, JSON_REJECT_DUPLICATES, &jerr);
    free(buf);
    if (!root)
        return cg_error_set(err, CG_PARSE, "artifact '%s': manifest.json line %d: %s", dir,
                            jerr.line, jerr.text);
    const char *format = get_str(root, "format");
    json_t *fv = json_object_get(root, "format_version"), *files = json_object_get(root, "files");
    json_t *cv = json_object_get(root, "convgate"), *result = json_object_get(root, "result");
    json_t *source = json_object_get(root, "source"), *tol = json_object_get(root, "tolerance");
    if (!format || strcmp(format, "convgate-artifact") != 0 || !json_is_integer(fv)) {
        st = cg_error_set(err, CG_INVALID, "artifact '%s': manifest.json is not a convgate "
                          "artifact manifest (format \"convgate-artifact\", format_version)", dir);
        goto done;
    }
    out->format_version = (int64_t)json_integer_value(fv);
    if (out->format_version != CG_ARTIFACT_FORMAT_VERSION) {
        st = cg_error_set(err, CG_UNSUPPORTED, "artifact '%s': format_version %" PRId64 "; "
                          "convgate %s reads format_version %d", dir, out->format_version,
                          CG_VERSION, CG_ARTIFACT_FORMAT_VERSION);
        goto done;
    }
    const char *res_file = json_is_object(result) ? get_str(result, "file") : NULL;
    const char *res_sha = json_is_object(result) ? get_str(result, "sha256") : NULL;
    if (!json_is_array(files) || !res_file || !res_sha || strcmp(res_file, "model.onnx") != 0 ||
        !json_is_object(source) || !get_str(source, "sha256")) {
        st = cg_error_set(err, CG_INVALID, "artifact '%s': manifest.json lacks files, "
                          "result {file: \"model.onnx\", sha256} or source.sha256", dir);
        goto done;
    }
    out->convgate_version = strdup(json_is_object(cv) && get_str(cv, "version")
                                       ? get_str(cv, "version") : "?");
    out->commit = strdup(json_is_object(cv) && get_str(cv, "commit") ? get_str(cv, "commit")
                                                                     : "?");
    out->source_sha256 = strdup(get_str(source, "sha256"));
    out->result_sha256 = strdup(res_sha);
    if (!out->convgate_version || !out->commit || !out->source_sha256 || !out->result_sha256) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto done;
    }
    /* every listed file, and model.onnx and the golden manifest among them */
    bool model_listed = false, golden_listed = false;
    for (size_t i = 0; i < json_array_size(files); i++) {
        json_t *f = json_array_get(files, i);
        if ((st = check_file(dir, f, i, err)) != CG_OK)
            goto done;
        const char *p = get_str(f, "path");
        if (strcmp(p, "model.onnx") == 0) {
            model_listed = true;
            if (strcmp(get_str(f, "sha256"), res_sha) != 0) {
                st = cg_error_set(err, CG_SECURITY, "artifact '%s': model.onnx is not the result "
                                  "the manifest names (sha256 %s, result.sha256 %s)", dir,
                                  get_str(f, "sha256"), res_sha);
                goto done;
            }
        }
        golden_listed = golden_listed || strcmp(p, "golden/manifest.json") == 0;
        out->files_checked++;
    }
    if (!model_listed || !golden_listed) {
        st = cg_error_set(err, CG_SECURITY, "artifact '%s': manifest.json does not list %s", dir,
                          model_listed ? "golden/manifest.json" : "model.onnx");
        goto done;
    }
    /* the golden set against the model, with the manifest's tolerance for the
     * reference unless the caller gives one (or runs a target path) */
    out->verify = *opt;
    if (!opt->target_count && !opt->outputs_from && !opt->tol.have_atol && !opt->tol.have_rtol &&
        !opt->tol.file && json_is_object(tol)) {
        json_t *a = json_object_get(tol, "atol"), *r = json_object_get(tol, "rtol");
        if (!json_is_number(a) || !json_is_number(r) || json_number_value(a) < 0 ||
            json_number_value(r) < 0) {
            st = cg_error_set(err, CG_INVALID, "artifact '%s': manifest.json tolerance needs "
                              "numbers atol and rtol >= 0", dir);
            goto done;
        }
        out->verify.tol.have_atol = out->verify.tol.have_rtol = true;
        out->verify.tol.atol = json_number_value(a);
        out->verify.tol.rtol = json_number_value(r);
    }
    snprintf(model_path, sizeof model_path, "%s/model.onnx", dir);
    snprintf(golden, sizeof golden, "%s/golden", dir);
    if ((st = cg_model_load(model_path, NULL, &out->model, err)) != CG_OK)
        goto done;
    st = cg_verify_golden(out->model, model_path, golden, &out->verify, &out->golden, err);
done:
    json_decref(root);
    return st;
}
