/* Memory and time budgets (see convgate/budget.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "convgate/budget.h"

struct cg_budget {
    _Atomic uint64_t limit;       /* bytes; 0 = unlimited */
    _Atomic uint64_t used;
    _Atomic uint64_t peak;
    _Atomic int64_t deadline_ns;  /* CLOCK_MONOTONIC; 0 = none */
    _Atomic uint64_t seconds_bits; /* the limit in seconds, as double bits (messages) */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t cg_budget_default_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (phys == 0 || (uint64_t)rl.rlim_cur < phys))
        phys = (uint64_t)rl.rlim_cur;
    return phys / 100 * CG_BUDGET_DEFAULT_PERCENT;
}

void cg_budget_set(cg_budget *b, uint64_t max_bytes, double seconds)
{
    atomic_store(&b->limit, max_bytes);
    int64_t dl = 0;
    if (seconds > 0) {
        double ns = seconds * 1e9;
        int64_t now = now_ns();
        dl = ns >= (double)(INT64_MAX - now) ? INT64_MAX : now + (int64_t)ns;
    }
    union {
        double d;
        uint64_t u;
    } bits = {seconds > 0 ? seconds : 0};
    atomic_store(&b->seconds_bits, bits.u);
    atomic_store(&b->deadline_ns, dl);
}

cg_budget *cg_budget_new(uint64_t max_bytes, double seconds)
{
    cg_budget *b = calloc(1, sizeof *b);
    if (b)
        cg_budget_set(b, max_bytes, seconds);
    return b;
}

void cg_budget_free(cg_budget *b)
{
    if (b && b != cg_budget_process())
        free(b);
}

static cg_budget process_budget;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void process_init(void)
{
    cg_budget_set(&process_budget, cg_budget_default_bytes(), 0);
}

cg_budget *cg_budget_process(void)
{
    pthread_once(&process_once, process_init);
    return &process_budget;
}

uint64_t cg_budget_limit(const cg_budget *b) { return atomic_load(&b->limit); }
uint64_t cg_budget_in_use(const cg_budget *b) { return atomic_load(&b->used); }
uint64_t cg_budget_peak(const cg_budget *b) { return atomic_load(&b->peak); }

uint64_t cg_budget_left(const cg_budget *b)
{
    uint64_t limit = atomic_load(&b->limit), used = atomic_load(&b->used);
    if (limit == 0)
        return UINT64_MAX;
    return used >= limit ? 0 : limit - used;
}

bool cg_budget_fits(const cg_budget *b, uint64_t bytes)
{
    return bytes <= cg_budget_left(b);
}

cg_status cg_budget_reserve(cg_budget *b, uint64_t bytes, const char *what, cg_error *err)
{
    uint64_t limit = atomic_load(&b->limit);
    uint64_t used = atomic_load(&b->used);
    for (;;) {
        if (limit && (bytes > limit || used > limit - bytes))
            return cg_error_set(err, CG_LIMIT,
                                "%s needs %llu bytes with %llu bytes already in use, over the "
                                "memory budget of %llu bytes (--max-memory)",
                                what ? what : "an allocation", (unsigned long long)bytes,
                                (unsigned long long)used, (unsigned long long)limit);
        if (atomic_compare_exchange_weak(&b->used, &used, used + bytes))
            break;
    }
    uint64_t now = used + bytes, peak = atomic_load(&b->peak);
    while (now > peak && !atomic_compare_exchange_weak(&b->peak, &peak, now))
        ;
    return CG_OK;
}

void cg_budget_release(cg_budget *b, uint64_t bytes)
{
    uint64_t used = atomic_load(&b->used);
    /* never below zero, even if a caller releases more than it reserved */
    while (!atomic_compare_exchange_weak(&b->used, &used, used > bytes ? used - bytes : 0))
        ;
}

bool cg_budget_expired(const cg_budget *b)
{
    int64_t dl = atomic_load(&b->deadline_ns);
    return dl != 0 && now_ns() >= dl;
}

double cg_budget_seconds(const cg_budget *b)
{
    union {
        uint64_t u;
        double d;
    } bits = {atomic_load(&b->seconds_bits)};
    return bits.d;
}
