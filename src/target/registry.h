/*
 * Internal interface of the target layer (src/target): how profiled targets
 * are made and what the registry, the profile evaluator and the CLI share
 * beyond include/convgate/target.h.
 *
 * Executing targets live above this stage (src/delegate/) and register
 * from the table src/delegate/builtin.def. Profiled targets come from JSON
 * capability profiles (docs/profiles.md) parsed by src/target/profile.c.
 */
#ifndef CG_TARGET_REGISTRY_H
#define CG_TARGET_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/target.h"

/* --- capability profiles ------------------------------------------------------ */

/* Parses and validates one profile file. Every error names the file and the
 * JSON path of the offending field ("x.json: $.ops.Conv.inputs[0].max_rank:
 * expected an integer"). The target is freed with t->vt->destroy(t). */
cg_status cg_profile_load(const char *path, cg_target **out, cg_error *err);

/* True when t was made by cg_profile_load. */
bool cg_profile_is(const cg_target *t);

/* Where a profile's rules come from (its "sources" list). */
typedef struct cg_profile_source {
    const char *repo;
    const char *path;
    const char *revision;
    const char *note; /* NULL when absent */
} cg_profile_source;

size_t cg_profile_source_count(const cg_target *t);
const cg_profile_source *cg_profile_source_at(const cg_target *t, size_t i);
/* The profile file it was read from, and its full runtime name. */
const char *cg_profile_path(const cg_target *t);
const char *cg_profile_runtime(const cg_target *t);
/* Number of op entries in the supported-op list. */
size_t cg_profile_op_count(const cg_target *t);

/* --- target parameters ("parameters" in a profile, docs/profiles.md) ----------- */

/* A new target: profile `base` with parameters bound by spec, "29" for a
 * single-parameter profile or "name=value[,name=value]"; named
 * "<base>@<spec>". It borrows base's rules: destroy it (t->vt->destroy)
 * before base. CG_USAGE naming the parameter and its range on a bad spec. */
cg_status cg_profile_bind(const cg_target *base, const char *spec, cg_target **out,
                          cg_error *err);

typedef struct cg_profile_param_info {
    const char *name;
    int64_t value;      /* this target's */
    int64_t dflt, min, max;
    const char *note;   /* NULL when absent */
    bool is_default;    /* the value is the profile's default */
} cg_profile_param_info;

size_t cg_profile_param_count(const cg_target *t);
/* "android_api=29 (the profile's default)" for every parameter of t ("" when
 * none). Returns buf. */
const char *cg_profile_params_text(const cg_target *t, char *buf, size_t len);
/* false when t has no parameter i */
bool cg_profile_param(const cg_target *t, size_t i, cg_profile_param_info *out);

/* --- type environment details ------------------------------------------------- */

/* Bit d set: dim d of the value depends on a symbolic dim of the graph
 * inputs (it changed when the symbols were bound to other sizes, or was
 * declared symbolic). 0 for unknown names and fully static values. */
uint32_t cg_type_env_dynamic_dims(const cg_type_env *env, const char *name);

/* cg_type_env_build for a runtime that does not know the bindings: the
 * bound symbols size the run, yet every dim that moves with any symbolic
 * input dim, bound or not, counts as dynamic (ONNX Runtime's shape
 * inference keeps them symbolic; src/lower uses this view). The run is fed
 * `feeds` when given (borrowed; NULL: seeded random inputs). */
cg_status cg_type_env_build_symbolic(const cg_model *model, const cg_dim_binding *dims,
                                     size_t dim_count, const cg_named_value *feeds,
                                     size_t feed_count, cg_type_env **out, cg_error *err);

/* Something that watches the recording run of a type environment's build
 * (not its dynamic-dim probe): `start` just before the run, `observe` for
 * every value, after the environment has recorded it. The gate times the
 * nodes on the run that types them, instead of a second run. */
typedef struct cg_type_env_watch {
    void (*start)(void *user);
    cg_status (*observe)(void *user, const cg_node *node, const char *name,
                         const cg_value *value);
    void *user;
} cg_type_env_watch;
/* cg_type_env_build_fed with w watching its recording run. */
cg_status cg_type_env_build_watched(const cg_model *model, const cg_dim_binding *dims,
                                    size_t dim_count, const struct cg_random_inputs *random,
                                    const cg_named_value *feeds, size_t feed_count,
                                    const cg_type_env_watch *w, cg_type_env **out,
                                    cg_error *err);

/* True when every dim the build of env sized was declared as a number (no
 * symbol or unnamed dim, so no binding used and no probe run): the
 * bindings, the random policy of the unfed inputs and the symbolic view
 * then change nothing, and cg_type_env_build_symbolic and
 * cg_type_env_build_fed on the same model and feeds give the same
 * environment. False for a declared-only environment and for NULL. */
bool cg_type_env_fixed_dims(const cg_type_env *env);

/* How many type environments this process (every thread) has built by a
 * reference run: each is a runtime's init and a run, which the gate shares
 * where it can; the tests count them. */
size_t cg_type_env_runs_made(void);

#endif
