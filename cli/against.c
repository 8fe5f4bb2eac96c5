/* The options of source-against-converted and of the LiteRT runners, as
 * compare, run and gate take them (cli.h, cli_against). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_against_init(cli_against *a)
{
    memset(a, 0, sizeof *a);
    cg_io_map_free(&a->map);
}

int cli_against_option(const char *cmd, cli_against *a, const char *opt, const char *arg)
{
    cg_error err;
    cg_error_clear(&err);
    if (strcmp(opt, "against") == 0 || strcmp(opt, "source") == 0) {
        a->other_path = arg;
        return 1;
    }
    if (strcmp(opt, "map") == 0) {
        if (a->rule_count == CLI_MAX_RULES) {
            cli_error(cmd, "more than %d --map rules", CLI_MAX_RULES);
            return -1;
        }
        if (cg_io_rule_parse(arg, &a->rules[a->rule_count], &err) != CG_OK) {
            cli_error(cmd, "%s", err.msg);
            return -1;
        }
        a->rule_count++;
        return 1;
    }
    if (strcmp(opt, "runner") == 0) {
        a->runner.kind = cg_runner_kind_parse(arg);
        if (a->runner.kind == CG_RUNNER_NONE) {
            cli_error(cmd, "--runner expects litert-node or litert-webgpu, got '%s'", arg);
            return -1;
        }
        return 1;
    }
    if (strcmp(opt, "precision") == 0) {
        if (strcmp(arg, "fp32") != 0 && strcmp(arg, "fp16") != 0) {
            cli_error(cmd, "--precision expects fp32 or fp16, got '%s'", arg);
            return -1;
        }
        a->runner.precision = arg;
        return 1;
    }
    return 0;
}

bool cli_against_check(const char *cmd, const cli_against *a, const char *other_option)
{
    if (a->rule_count && !a->other_path) {
        cli_error(cmd, "--map applies with --%s", other_option);
        return false;
    }
    if (a->runner.precision && a->runner.kind != CG_RUNNER_LITERT_WEBGPU) {
        cli_error(cmd, "--precision applies to --runner litert-webgpu");
        return false;
    }
    return true;
}

bool cli_against_load(const char *cmd, cli_against *a, const cg_model *model, bool model_is_a)
{
    cg_error err;
    cg_error_clear(&err);
    if (!a->other_path)
        return true;
    if (!(a->other = cli_load_model(cmd, a->other_path, NULL)))
        return false;
    const cg_model *ma = model_is_a ? model : a->other, *mb = model_is_a ? a->other : model;
    if (cg_io_map_build(ma, mb, a->rules, a->rule_count, &a->map, &err) != CG_OK) {
        cli_error(cmd, "%s", err.msg);
        return false;
    }
    a->have_map = true;
    return true;
}

void cli_against_free(cli_against *a)
{
    for (size_t i = 0; i < a->rule_count; i++)
        cg_io_rule_free(&a->rules[i]);
    cg_io_map_free(&a->map);
    cg_model_free(a->other);
    memset(a, 0, sizeof *a);
}
