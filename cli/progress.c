/*
 * Progress on stderr (convgate/progress.h): one line redrawn in place,
 * "convgate gate: gate 3 2/3 samples 1.4s sample_1", only when stderr is a
 * terminal and --quiet was not given, so logs and pipes stay clean. Colour
 * only on a terminal and never under NO_COLOR (no-color.org). Item names
 * come from the model: control bytes are shown as '?' so a name cannot
 * move the cursor or recolour the terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define PROGRESS_INTERVAL_S 0.1

static struct {
    const char *command;
    bool on;           /* stderr is a terminal and not --quiet */
    bool colour;
    bool drawn;        /* a line is on the screen */
    double start, last;
    const char *stage; /* of the last line drawn */
} progress;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

bool cli_quiet_arg(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--quiet") == 0)
            return true;
    }
    return false;
}

void cli_progress_begin(const char *command, int argc, char **argv)
{
    const char *no_color = getenv("NO_COLOR");
    memset(&progress, 0, sizeof progress);
    progress.command = command;
    progress.on = isatty(STDERR_FILENO) && !cli_quiet_arg(argc, argv);
    progress.colour = progress.on && !(no_color && no_color[0]);
    progress.start = now_s();
}

bool cli_colour(void) { return progress.colour; }

/* Terminal width, or 80. */
static size_t columns(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    return 80;
}

static void draw(void *user, const cg_progress_event *ev)
{
    (void)user;
    double t = now_s();
    bool last = ev->total && ev->done >= ev->total;
    bool new_stage = !progress.stage || strcmp(progress.stage, ev->stage) != 0;
    if (progress.drawn && !last && !new_stage && t - progress.last < PROGRESS_INTERVAL_S)
        return;
    progress.last = t;
    progress.stage = ev->stage;
    char line[512];
    size_t n;
    if (ev->total)
        n = (size_t)snprintf(line, sizeof line, "%s %zu/%zu %s %.1fs", ev->stage, ev->done,
                             ev->total, ev->unit, t - progress.start);
    else
        n = (size_t)snprintf(line, sizeof line, "%s %zu %s %.1fs", ev->stage, ev->done, ev->unit,
                             t - progress.start);
    if (n >= sizeof line)
        n = sizeof line - 1;
    if (ev->item && n + 2 < sizeof line) {
        line[n++] = ' ';
        for (const unsigned char *p = (const unsigned char *)ev->item; *p && n + 1 < sizeof line;
             p++)
            line[n++] = *p < 0x20 || *p == 0x7f ? '?' : (char)*p;
        line[n] = '\0';
    }
    /* "convgate CMD: " and the line, cut to the terminal's width (bytes, so
     * a multi-byte name may be cut short of the edge, never past it) */
    size_t room = columns() - 1, head = strlen(progress.command) + 11;
    if (head >= room)
        return;
    if (n > room - head)
        line[room - head] = '\0';
    fprintf(stderr, "\r\033[K%sconvgate %s:%s %s", progress.colour ? "\033[36m" : "",
            progress.command, progress.colour ? "\033[0m" : "", line);
    fflush(stderr);
    progress.drawn = true;
}

cg_progress cli_progress(void)
{
    cg_progress p = {progress.on ? draw : NULL, NULL};
    return p;
}

void cli_progress_clear(void)
{
    if (!progress.drawn)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    progress.drawn = false;
    progress.stage = NULL;
}
