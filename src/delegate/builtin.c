/*
 * cg_target_registry_load: the executing targets of builtin.def, then the
 * profiles. It lives here, above the target stage, so that the target
 * stage never links against a delegate: delegates depend on the target
 * stage (its vtable, its registry), never the reverse.
 */
#include "convgate/target.h"

#define CG_EXECUTING_TARGET(factory) cg_target *factory(void);
#include "delegate/builtin.def"
#undef CG_EXECUTING_TARGET

typedef cg_target *(*builtin_factory)(void);

static const builtin_factory builtin_targets[] = {
#define CG_EXECUTING_TARGET(factory) factory,
#include "delegate/builtin.def"
#undef CG_EXECUTING_TARGET
    NULL /* keeps the array non-empty in a build without delegates */
};

cg_status cg_target_registry_load(const char *profile_dir, cg_target_registry **out,
                                  cg_error *err)
{
    cg_target_registry *reg = NULL;
    cg_status st = cg_target_registry_new(&reg, err);
    for (size_t i = 0; st == CG_OK && builtin_targets[i]; i++) {
        /* a delegate that cannot initialize on this machine just is not listed */
        cg_target *t = builtin_targets[i]();
        if (t)
            st = cg_target_registry_add(reg, t, err);
    }
    if (st == CG_OK)
        st = cg_target_registry_add_profiles(reg, profile_dir, err);
    if (st != CG_OK) {
        cg_target_registry_free(reg);
        reg = NULL;
    }
    *out = reg;
    return st;
}
