/* The progress callback (convgate/progress.h): one call site for every
 * stage, so a missing callback costs one branch. */
#include "convgate/progress.h"

void cg_progress_report(const cg_progress *p, const char *stage, const char *unit, size_t done,
                        size_t total, const char *item)
{
    if (!p || !p->fn)
        return;
    cg_progress_event ev = {stage, unit, done, total, item};
    p->fn(p->user, &ev);
}
