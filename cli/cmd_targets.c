/*
 * convgate targets: list every target the registry knows (executing targets
 * compiled in, and the capability profiles of the profile directory) with
 * their kind, runtime version, fallback policy, precision and where their
 * rules come from. A profile that fails to validate fails the command with
 * the file and JSON path of the problem.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/target.h"
#include "report/report.h"
#include "target/registry.h"

static void usage(FILE *f)
{
    fputs("usage: convgate targets [--json] [--profiles DIR]\n"
          "  --json           the targets as JSON (docs/json.md; with sources and what\n"
          "                   each profile does not model)\n"
          "  --profiles DIR   read capability profiles from DIR (default: $CONVGATE_PROFILES,\n"
          "                   else the source tree's profiles/)\n",
          f);
}

int cmd_targets(int argc, char **argv)
{
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            /* main() saw it */
        } else if (!strcmp(argv[i], "--profiles")) {
            if (++i == argc) {
                cli_error("targets", "--profiles needs a directory");
                return CG_EXIT_ERROR;
            }
            dir = argv[i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return CG_EXIT_OK;
        } else {
            cli_error("targets", "unknown argument '%s'", argv[i]);
            usage(stderr);
            return CG_EXIT_ERROR;
        }
    }
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    if (cg_target_registry_load(dir, &reg, &err) != CG_OK) {
        cli_error("targets", "%s", err.msg);
        return CG_EXIT_ERROR;
    }
    int rc = CG_EXIT_OK;
    if (cli_json_on())
        rc = cli_json_emit(rc, cg_report_targets_json(reg));
    else
        cg_report_targets_text(stdout, reg);
    cg_target_registry_free(reg);
    return rc;
}
