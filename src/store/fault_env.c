/*
 * The one door from the environment to the fault seam (fault.c).
 * DBCRON_TEST_FAULTS is read only in a build configured with
 * DBCRON_FAULT_SEAM=ON (the test builds); anywhere else this returns NULL
 * whatever the environment holds, so a production node cannot fail its
 * statements on purpose because a variable leaked into its environment.
 * Kept alone in its file so that tests/unit/test_fault_env.c can compile it
 * without the option and prove exactly that.
 */
#include <stdlib.h>

#include "store/store.h"

const char *store_fault_env(void)
{
#ifdef DBCRON_FAULT_SEAM
	const char *spec = getenv("DBCRON_TEST_FAULTS");
	return spec && *spec ? spec : NULL;
#else
	return NULL;
#endif
}
