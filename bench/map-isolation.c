/*
 * map-isolation: the client of the isolation measurement in bench/maps.py. Holds N Server-Sent Events
 * streams open on one class map (B) and one on another (A), sends a request that changes A, counts what B's
 * streams are sent meanwhile, then sends one that changes B and measures how long after it each of B's
 * streams had the change.
 *
 *   map-isolation PORT B_PATH N A_PATH QUIET_SECONDS TRIGGER_A MARKER_A TRIGGER_B MARKER_B [PID...]
 *
 * PORT           the server on 127.0.0.1; B's streams come from 127.0.0.1, 127.0.0.2, ... (PER_ADDRESS from each)
 * B_PATH, N      what each of the N streams on B GETs (Accept: text/event-stream)
 * A_PATH         what the one stream on A GETs: it shows that A's change was published
 * QUIET_SECONDS  how long after A's change reached A's stream B's streams are still watched
 * TRIGGER_A/_B   whole HTTP/1.1 requests (files), each sent as it is on a connection of its own; the clock
 *                starts just before it is sent; the answer's status line is reported
 * MARKER_A/_B    bytes the change carries and nothing before it does
 * PID...         processes whose resident memory (VmRSS, summed) is read before the streams open, once they
 *                are open and at the end, and whose CPU time is read around the change of A
 *
 * While A changes, every line each stream of B is sent is counted: `data:` lines (a frame that carries a
 * change or a reset) and `: heartbeat` comments apart, and the bytes. Prints one line of JSON.
 * Exit status 1 when a stream could not be opened, or B's change did not reach every stream in 60 s.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { TAIL = 128, BATCH = 250, PER_ADDRESS = 10000, LINE = 16 };

struct stream {
    int fd;
    size_t seen;          /* bytes read so far */
    int has_headers;      /* the response's status line and headers have arrived */
    int has_message;      /* the marker watched for has arrived */
    double at;            /* seconds after the trigger when it did */
    size_t kept;          /* bytes of `tail` in use */
    char tail[TAIL * 2];  /* the last bytes read, so a marker or header end split across reads is found */
    size_t column;        /* where the current line is, and its first bytes */
    char line[LINE];
    long data_lines;      /* `data:` lines so far */
    long heartbeats;      /* `: heartbeat` comments so far */
};

static const char *marker = ""; /* what the streams are watched for now */
static double started;          /* when the trigger watched for was sent; 0 before */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static long rss_kb(int count, char **pids) {
    long total = 0;
    for (int i = 0; i < count; i++) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%s/status", pids[i]);
        FILE *file = fopen(path, "r");
        if (!file) continue;
        while (fgets(line, sizeof line, file))
            if (strncmp(line, "VmRSS:", 6) == 0) total += strtol(line + 6, NULL, 10);
        fclose(file);
    }
    return total;
}

/* CPU clock ticks (user and system) the processes have used so far. */
static long cpu_ticks(int count, char **pids) {
    long total = 0;
    for (int i = 0; i < count; i++) {
        char path[64], text[1024];
        snprintf(path, sizeof path, "/proc/%s/stat", pids[i]);
        FILE *file = fopen(path, "r");
        if (!file) continue;
        size_t length = fread(text, 1, sizeof text - 1, file);
        fclose(file);
        text[length] = 0;
        char *rest = strrchr(text, ')');
        long utime = 0, stime = 0;
        if (rest && sscanf(rest + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime, &stime) == 2)
            total += utime + stime;
    }
    return total;
}

/* A connection to the server from the loopback address stream `i`'s share of PER_ADDRESS falls on. */
static int open_connection(int port, int i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    struct sockaddr_in source = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK + i / PER_ADDRESS)};
    if (bind(fd, (struct sockaddr *)&source, sizeof source) != 0) die("bind");
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_all(int fd, const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t sent = send(fd, bytes, length, 0);
        if (sent < 0) die("send");
        bytes += sent;
        length -= sent;
    }
}

/* Counts the lines of `count` bytes: a line is judged by its first bytes once its newline arrives. */
static void count_lines(struct stream *s, const char *bytes, size_t count) {
    for (size_t k = 0; k < count; k++) {
        if (bytes[k] == '\n') {
            if (s->column >= 5 && memcmp(s->line, "data:", 5) == 0) s->data_lines++;
            if (s->column >= 11 && memcmp(s->line, ": heartbeat", 11) == 0) s->heartbeats++;
            s->column = 0;
        } else if (s->column < LINE) {
            s->line[s->column++] = bytes[k];
        } else {
            s->column = LINE; /* long enough to judge; the rest of the line does not matter */
        }
    }
}

/* Reads what `s` has; notes its headers and the marker, looking across the boundary of reads. */
static void read_stream(struct stream *s) {
    char buffer[16384];
    for (;;) {
        ssize_t count = recv(s->fd, buffer, sizeof buffer, 0);
        if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (count <= 0) {
            fprintf(stderr, "a stream was closed by the server\n");
            exit(1);
        }
        if (s->seen == 0 && (count < 12 || strncmp(buffer, "HTTP/1.1 200", 12) != 0)) {
            fprintf(stderr, "a stream was refused: %.*s\n", (int)(count < 200 ? count : 200), buffer);
            exit(1);
        }
        s->seen += (size_t)count;
        count_lines(s, buffer, (size_t)count);
        size_t offset = 0;
        while (offset < (size_t)count) {
            size_t room = sizeof s->tail - s->kept, take = (size_t)count - offset < room ? (size_t)count - offset : room;
            memcpy(s->tail + s->kept, buffer + offset, take);
            s->kept += take;
            offset += take;
            if (!s->has_headers && memmem(s->tail, s->kept, "\r\n\r\n", 4)) s->has_headers = 1;
            if (started > 0 && !s->has_message && memmem(s->tail, s->kept, marker, strlen(marker))) {
                s->has_message = 1;
                s->at = now() - started;
            }
            if (s->kept > TAIL) { /* keep the last TAIL bytes */
                memmove(s->tail, s->tail + s->kept - TAIL, TAIL);
                s->kept = TAIL;
            }
        }
    }
}

/* The status code a trigger was answered with (its connection closes after the answer); 0 for none in 10 s. */
static int answer_status(int fd) {
    fcntl(fd, F_SETFL, 0);
    struct timeval wait = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    char head[16] = {0};
    ssize_t count = recv(fd, head, sizeof head - 1, MSG_WAITALL);
    close(fd);
    return count >= 12 && strncmp(head, "HTTP/1.1 ", 9) == 0 ? atoi(head + 9) : 0;
}

static size_t read_file(const char *path, char *into, size_t room) {
    FILE *file = fopen(path, "rb");
    if (!file) die(path);
    size_t length = fread(into, 1, room, file);
    fclose(file);
    return length;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 10) {
        fprintf(stderr, "usage: map-isolation PORT B_PATH N A_PATH QUIET_SECONDS TRIGGER_A MARKER_A TRIGGER_B MARKER_B [PID...]\n");
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[3]);
    const char *b_path = argv[2], *a_path = argv[4], *marker_a = argv[7], *marker_b = argv[9];
    double quiet = atof(argv[5]);
    if (strlen(marker_a) >= TAIL || strlen(marker_b) >= TAIL) { fprintf(stderr, "a marker is too long\n"); return 2; }
    int pid_count = argc - 10;
    char **pids = argv + 10;
    static char trigger_a[65536], trigger_b[65536];
    size_t trigger_a_length = read_file(argv[6], trigger_a, sizeof trigger_a);
    size_t trigger_b_length = read_file(argv[8], trigger_b, sizeof trigger_b);

    long rss_before = rss_kb(pid_count, pids);
    /* Stream n is A's; 0 to n - 1 are B's. */
    struct stream *streams = calloc(n + 1, sizeof *streams);
    int poll = epoll_create1(0);
    struct epoll_event events[1024];
    /* Opened in batches, each waited for, so the server's accept queue never overflows and every stream is
     * in place before anything changes. */
    for (int opened = 0; opened <= n;) {
        int batch_end = opened + BATCH < n + 1 ? opened + BATCH : n + 1;
        for (int i = opened; i < batch_end; i++) {
            char request[512];
            int length = snprintf(request, sizeof request,
                                  "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n",
                                  i == n ? a_path : b_path, port);
            streams[i].fd = open_connection(port, i == n ? 0 : i);
            send_all(streams[i].fd, request, length);
            fcntl(streams[i].fd, F_SETFL, O_NONBLOCK);
            struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
            if (epoll_ctl(poll, EPOLL_CTL_ADD, streams[i].fd, &event) != 0) die("epoll_ctl");
        }
        double deadline = now() + 30;
        for (int waiting = 1; waiting;) {
            int ready = epoll_wait(poll, events, 1024, 1000);
            for (int e = 0; e < ready; e++) read_stream(&streams[events[e].data.u32]);
            waiting = 0;
            for (int i = opened; i < batch_end; i++) waiting |= !streams[i].has_headers;
            if (waiting && now() > deadline) {
                fprintf(stderr, "streams %d to %d did not all get their headers within 30 s\n", opened, batch_end);
                return 1;
            }
        }
        opened = batch_end;
    }
    /* Let the server settle what opening the streams set in motion; what came so far is not counted. */
    double settle_until = now() + (n > 10000 ? 1.0 : 0.5);
    while (now() < settle_until) {
        int ready = epoll_wait(poll, events, 1024, 100);
        for (int e = 0; e < ready; e++) read_stream(&streams[events[e].data.u32]);
    }
    long rss_open = rss_kb(pid_count, pids);
    long data_before = 0, heartbeats_before = 0;
    size_t bytes_before = 0;
    for (int i = 0; i < n; i++) {
        data_before += streams[i].data_lines;
        heartbeats_before += streams[i].heartbeats;
        bytes_before += streams[i].seen;
    }

    /* A changes: watched on A's stream, and B's counted until QUIET seconds after A's stream had it. */
    long ticks_before = cpu_ticks(pid_count, pids);
    marker = marker_a;
    int trigger_fd = open_connection(port, 0);
    started = now();
    send_all(trigger_fd, trigger_a, trigger_a_length);
    double a_reached = -1, window_end = started + 30 + quiet;
    while (now() < window_end) {
        int ready = epoll_wait(poll, events, 1024, 50);
        for (int e = 0; e < ready; e++) read_stream(&streams[events[e].data.u32]);
        if (a_reached < 0 && streams[n].has_message) {
            a_reached = streams[n].at;
            window_end = started + a_reached + quiet;
        }
    }
    double window = now() - started;
    long ticks_a = cpu_ticks(pid_count, pids) - ticks_before;
    int status_a = answer_status(trigger_fd);
    long data_during_a = 0, heartbeats_during_a = 0;
    size_t bytes_during_a = 0;
    int streams_sent_data = 0, streams_sent_a = 0;
    for (int i = 0; i < n; i++) {
        streams_sent_a += streams[i].has_message;
        streams[i].has_message = 0;
        data_during_a += streams[i].data_lines;
        heartbeats_during_a += streams[i].heartbeats;
        bytes_during_a += streams[i].seen;
        streams_sent_data += streams[i].data_lines > 0; /* none had one when they opened */
    }
    data_during_a -= data_before;
    heartbeats_during_a -= heartbeats_before;
    bytes_during_a -= bytes_before;

    /* B changes: timed to each of its streams. */
    long data_before_b = 0;
    for (int i = 0; i < n; i++) data_before_b += streams[i].data_lines;
    marker = marker_b;
    started = 0;
    trigger_fd = open_connection(port, 0);
    started = now();
    send_all(trigger_fd, trigger_b, trigger_b_length);
    int received = 0;
    double deadline = started + 60;
    while (received < n && now() < deadline) {
        int ready = epoll_wait(poll, events, 1024, 1000);
        for (int e = 0; e < ready; e++) {
            struct stream *s = &streams[events[e].data.u32];
            int had = s->has_message;
            read_stream(s);
            received += s != &streams[n] && s->has_message && !had;
        }
    }
    /* Anything more that B's change brings comes within a moment. */
    double linger_until = now() + 0.5;
    while (now() < linger_until) {
        int ready = epoll_wait(poll, events, 1024, 100);
        for (int e = 0; e < ready; e++) read_stream(&streams[events[e].data.u32]);
    }
    int status_b = answer_status(trigger_fd);
    long rss_after = rss_kb(pid_count, pids);
    long data_after_b = 0;
    for (int i = 0; i < n; i++) data_after_b += streams[i].data_lines;

    double *times = malloc(n * sizeof *times);
    int count = 0;
    for (int i = 0; i < n; i++)
        if (streams[i].has_message) times[count++] = streams[i].at * 1000;
    qsort(times, count, sizeof *times, compare);
    printf("{\"streams\": %d, \"a_status\": %d, \"a_reached_ms\": %.2f, \"window_s\": %.2f, "
           "\"b_data_during_a\": %ld, \"b_streams_sent_data_during_a\": %d, \"b_heartbeats_during_a\": %ld, "
           "\"b_bytes_during_a\": %zu, \"b_streams_sent_a\": %d, \"cpu_ticks_during_a\": %ld, "
           "\"b_status\": %d, \"received\": %d, \"b_data_after_b\": %ld, \"first_ms\": %.2f, \"p50_ms\": %.2f, "
           "\"p99_ms\": %.2f, \"last_ms\": %.2f, \"rss_before_kb\": %ld, \"rss_open_kb\": %ld, \"rss_after_kb\": %ld}\n",
           n, status_a, a_reached * 1000, window, data_during_a, streams_sent_data, heartbeats_during_a, bytes_during_a,
           streams_sent_a, ticks_a, status_b, count, data_after_b - data_before_b, count ? times[0] : -1, count ? times[count / 2] : -1,
           count ? times[(int)(count * 0.99)] : -1, count ? times[count - 1] : -1, rss_before, rss_open, rss_after);
    for (int i = 0; i <= n; i++) close(streams[i].fd);
    return count == n ? 0 : 1;
}
