/* What convgate was built from (convgate/rewrite.h): the commit, embedded
 * at build time by tools/build_commit.cmake. */
#include "cg_build_commit.h"
#include "convgate/rewrite.h"

const char *cg_build_commit(void) { return CG_BUILD_COMMIT; }
