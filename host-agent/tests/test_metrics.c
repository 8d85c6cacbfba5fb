// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Prometheus metrics: the writer (names, labels, escaping; promtool check
 * metrics passes on it, and fails on a broken text, so the check can fail)
 * and the HTTP endpoint (GET, HEAD, 404, 405, a silent client, a request
 * in flight when the server goes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctier_mover.h"
#include "metrics.h"
#include "metrics_http.h"

static const char stats_json[] =
	"{\"name\":\"web\",\"mode\":\"auto\",\"profiler\":\"telescope-flex\",\"windows\":42,"
	"\"promotions\":7,\"demotions\":9,\"bytes_moved\":33554432,\"thrash_events\":1,"
	"\"move_fail_busy\":2,\"move_fail_absent\":0,\"move_fail_nomem\":0,\"move_fail_other\":1,"
	"\"profiler_cpu_ns\":1500000,\"residency_cpu_ns\":10,\"policy_cpu_ns\":20,"
	"\"mover_cpu_ns\":30,\"hints_cpu_ns\":0,"
	"\"tlb\":{\"host_tlb_shootdowns\":{\"available\":true,\"total\":5000,\"last_window\":70,"
	"\"in_moving_windows\":2500,\"moved_bytes\":2147483648,\"per_gib_moved\":1250.0},"
	"\"kvm_remote_tlb_flushes\":{\"available\":false,\"total\":40,\"last_window\":0,"
	"\"in_moving_windows\":12,\"moved_bytes\":1073741824,\"per_gib_moved\":12.0},"
	"\"kvm_remote_tlb_flush_requests\":{\"available\":false,\"total\":0,\"last_window\":0,"
	"\"in_moving_windows\":0,\"moved_bytes\":0,\"per_gib_moved\":0.0}},"
	"\"tdp\":{\"source\":true,\"abi_version\":2,\"flush\":\"window\",\"flushes\":42,"
	"\"flush_ns\":2500000000},"
	"\"share\":{\"state\":\"granted\",\"granted\":536870912,\"wanted\":805306368,"
	"\"protected\":67108864,\"why\":\"rate-limited\",\"rounds\":9},"
	"\"backends\":[{\"backend\":\"pc.ram\",\"faults_stored\":100,\"faults_zero\":5,"
	"\"faults_wp\":1,\"fault_p50_ns\":4000,\"fault_p99_ns\":90000,\"idle_faults\":70,"
	"\"idle_fault_p50_ns\":3000,\"idle_fault_p99_ns\":25000,"
	"\"fault_hist\":{\"le_ns\":[1000,5000,100000],\"count\":[0,60,99],\"total\":100,"
	"\"sum_ns\":1200000},"
	"\"ctiers\":[{\"name\":\"lz4\",\"stored_bytes\":1048576,\"pool_bytes\":400000},"
	"{\"name\":\"far\",\"stored_bytes\":4096,\"pool_bytes\":2000,\"remote\":{\"copies\":2,"
	"\"under_copies\":3,\"servers\":[{\"server\":\"10.0.0.2:7500\",\"state\":\"up\","
	"\"pages\":11,\"lost\":0},{\"server\":\"10.0.0.3:7500\",\"state\":\"down\","
	"\"pages\":5,\"lost\":2}]}}]}],"
	"\"hints\":{\"channel\":\"attached\",\"accepted\":{\"free\":3,\"cold\":4},"
	"\"rejected\":{\"range\":1},\"saved_bytes\":8192}}";
static const char report_json[] =
	"{\"name\":\"web\",\"tiers\":[{\"tier\":\"dram\",\"bytes\":268435456,\"usd_per_hour\":1.7e-05},"
	"{\"tier\":\"lz4\",\"bytes\":805306368,\"usd_per_hour\":2e-06}],\"bytes\":1073741824,"
	"\"usd_per_hour\":1.9e-05,\"all_dram_usd_per_hour\":6.8e-05,\"saving_pct\":64.6,"
	"\"slowdown\":{\"fault_time_pct\":0.4},\"hot_set_bytes\":134217728}";

static JsonObject *object(JsonParser *p, const char *text)
{
	assert_true(json_parser_load_from_data(p, text, -1, NULL));
	return json_node_get_object(json_parser_get_root(p));
}

/* 0 promtool passed, 1 it refused (@why), -1 no promtool here. */
static int promtool(const char *text, char **why)
{
	g_autofree char *path = g_find_program_in_path("promtool");
	g_autofree char *in = g_build_filename(g_get_tmp_dir(), "vtier-metrics-XXXXXX", NULL);
	g_autofree char *cmd = NULL, *out = NULL, *err = NULL;
	int fd, status = 0;

	if (!path)
		return -1;
	fd = g_mkstemp(in);
	assert_true(fd >= 0);
	assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	cmd = g_strdup_printf("sh -c 'promtool check metrics < %s'", in);
	assert_true(g_spawn_command_line_sync(cmd, &out, &err, &status, NULL));
	unlink(in);
	*why = g_strconcat(out, err, NULL);
	return g_spawn_check_wait_status(status, NULL) ? 0 : 1;
}

/* Every line of @want in @text, and promtool's check of @text (skipped without promtool). */
static void assert_metrics(const char *text, const char *const *want, size_t n)
{
	g_autofree char *why = NULL;
	int ret;

	for (size_t i = 0; i < n; i++)
		if (!strstr(text, want[i]))
			fail_msg("no '%s' in:\n%s", want[i], text);
	ret = promtool(text, &why);
	if (ret < 0)
		skip();
	if (ret)
		fail_msg("promtool check metrics refused:\n%s\n%s", why, text);
}

static void test_writer(void **state)
{
	g_autoptr(JsonParser) p1 = json_parser_new(), p2 = json_parser_new();
	g_autoptr(JsonParser) p3 = json_parser_new(), p4 = json_parser_new();
	struct vt_metrics_vm vms[2] = {
		{ .vm = "web", .domain = "web", .uuid = "4dea22b3-1d52-d8f3-2516-782e98ab3fa0",
		  .ram_bytes = 1ULL << 30,
		  .stats = object(p1, stats_json), .report = object(p2, report_json) },
		/* libvirt takes any name: quotes, backslashes, newlines, UTF-8 */
		{ .vm = "vm1", .domain = "db \"2\"\\\n\xc3\xa9", .uuid = "",
		  .stats = object(p3, "{\"mode\":\"off\",\"windows\":0,\"tdp\":{\"source\":false,"
				  "\"flushes\":7,\"flush_ns\":9}}"),
		  .report = object(p4, "{\"tiers\":[]}") },
	};
	struct vt_tiers tiers = {
		.nr = 2,
		.tier = {
			{ .name = "dram", .nodes = { 0 }, .nr_nodes = 1,
			  .capacity_bytes = 8ULL << 30, .free_bytes = 3ULL << 30 },
			{ .name = "cxl", .nodes = { 1, 2 }, .nr_nodes = 2,
			  .capacity_bytes = 16ULL << 30, .free_bytes = 15ULL << 30 },
		},
	};
	struct vt_ctier_spec ctier[2] = {
		{ .name = "lz4", .medium = VT_MEDIUM_NODE, .node = 1, .capacity_bytes = 1ULL << 30 },
		{ .name = "far", .medium = VT_MEDIUM_REMOTE },
	};
	struct vt_metrics_host host = { .name = "host-7.rack-2", .tiers = &tiers, .ctier = ctier,
					 .nr_ctier = 2, .share_on = true,
					 .share_budget = 6ULL << 30, .share_granted = 5ULL << 30,
					 .share_waiting = 1ULL << 29, .share_rounds = 77 };
	struct vt_metrics_daemon dm = { .libvirt = true, .libvirt_connected = true,
					.host = &host };
	g_autofree char *text = vt_metrics_write(&dm, vms, 2);
	static const char *const want[] = {
		"# TYPE vtier_vm_memory_bytes gauge\n",
		"vtier_vm_memory_bytes{domain=\"web\",uuid=\"4dea22b3-1d52-"
		"d8f3-2516-782e98ab3fa0\",tier=\"lz4\"} 805306368\n",
		"vtier_vm_moves_total{domain=\"web\",uuid=\"4dea22b3-1d52-"
		"d8f3-2516-782e98ab3fa0\",direction=\"demote\"} 9\n",
		"stage=\"profiler\"} 0.0015\n",
		"vtier_vm_saving_ratio{domain=\"web\"",
		"backend=\"pc.ram\"} 9.0000000000000006e-05\n",
		/* the faults served with the mover idle: apart from every stored fault */
		"# TYPE vtier_vm_idle_faults_total counter\n",
		"vtier_vm_idle_faults_total{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-2516-782e98ab3fa0\","
		"backend=\"pc.ram\"} 70\n",
		"vtier_vm_idle_fault_latency_p50_seconds{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-2516-"
		"782e98ab3fa0\",backend=\"pc.ram\"} 3.0000000000000001e-06\n",
		"vtier_vm_idle_fault_latency_p99_seconds{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-2516-"
		"782e98ab3fa0\",backend=\"pc.ram\"} 2.5000000000000001e-05\n",
		"vtier_vm_info{domain=\"db \\\"2\\\"\\\\\\n\xc3\xa9\",uuid=\"\","
		"vm=\"vm1\",mode=\"off\",profiler=\"\"} 1\n",
		"# TYPE vtier_vm_fault_latency_seconds histogram\n",
		"backend=\"pc.ram\",kind=\"stored\",le=\"5.0000000000000004e-06\"} 60\n",
		"backend=\"pc.ram\",kind=\"stored\",le=\"+Inf\"} 100\n",
		"vtier_vm_fault_latency_seconds_sum{domain=\"web\"",
		"kind=\"stored\"} 0.0012000000000000001\n",
		"vtier_vm_fault_latency_seconds_count{domain=\"web\"",
		"vtier_vms 2\n",
		"vtier_vm_remote_server_up{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-2516-782e98ab3fa0\","
		"backend=\"pc.ram\",tier=\"far\",server=\"10.0.0.3:7500\"} 0\n",
		"tier=\"far\",server=\"10.0.0.2:7500\"} 1\n",
		"vtier_vm_remote_server_pages{domain=\"web\"",
		"tier=\"far\",server=\"10.0.0.2:7500\"} 11\n",
		"# TYPE vtier_vm_remote_server_lost_total counter\n",
		"tier=\"far\",server=\"10.0.0.3:7500\"} 2\n",
		"vtier_vm_remote_under_copies{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-2516-782e98ab3fa0\","
		"backend=\"pc.ram\",tier=\"far\"} 3\n",
		"vtier_libvirt_connected 1\n",
		"vtier_vm_ram_bytes{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-"
		"2516-782e98ab3fa0\"} 1073741824\n",
		/* the host's view: what it has, what the VMs take, what it saves */
		"vtier_host_info{host=\"host-7.rack-2\"} 1\n",
		"vtier_host_tier_capacity_bytes{tier=\"cxl\",kind=\"numa\",nodes=\"1,2\"} "
		"17179869184\n",
		"vtier_host_tier_capacity_bytes{tier=\"lz4\",kind=\"compressed\",nodes=\"1\"} "
		"1073741824\n",
		"vtier_host_tier_free_bytes{tier=\"dram\",kind=\"numa\",nodes=\"0\"} 3221225472\n",
		"vtier_host_tier_vm_bytes{tier=\"dram\",kind=\"numa\"} 268435456\n",
		"vtier_host_tier_vm_bytes{tier=\"cxl\",kind=\"numa\"} 0\n",
		"vtier_host_tier_vm_bytes{tier=\"lz4\",kind=\"compressed\"} 805306368\n",
		"vtier_host_ctier_pool_bytes{tier=\"lz4\",kind=\"compressed\"} 400000\n",
		"vtier_host_ctier_pool_bytes{tier=\"far\",kind=\"remote\"} 2000\n",
		"vtier_host_cost_usd_per_hour 1.9000000000000001e-05\n",
		"vtier_host_all_dram_cost_usd_per_hour 6.7999999999999999e-05\n",
		"vtier_host_saving_ratio 0.72058823529",
		/* the DRAM sharing between VMs: the VM's grant and why, the host's sums */
		"vtier_vm_dram_share_bytes{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-2516-782e98ab3fa0\","
		"kind=\"granted\",why=\"rate-limited\"} 536870912\n",
		"kind=\"protected\",why=\"rate-limited\"} 67108864\n",
		"vtier_host_dram_share_bytes{kind=\"budget\"} 6442450944\n",
		"vtier_host_dram_share_bytes{kind=\"waiting\"} 536870912\n",
		"vtier_host_dram_share_rounds_total 77\n",
		/* TLB flushes: the host-wide count while read, per GiB once memory moved */
		"# TYPE vtier_vm_host_tlb_shootdowns_total counter\n",
		"vtier_vm_host_tlb_shootdowns_total{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-2516-"
		"782e98ab3fa0\"} 5000\n",
		"vtier_vm_tlb_flushes_per_moved_gib{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-2516-"
		"782e98ab3fa0\",counter=\"host_tlb_shootdowns\"} 1250\n",
		"counter=\"kvm_remote_tlb_flushes\"} 12\n",
		/* the tdp source's own flushes (tdp_flush=window) while over tdp */
		"# TYPE vtier_vm_tdp_tlb_flushes_total counter\n",
		"vtier_vm_tdp_tlb_flushes_total{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-2516-"
		"782e98ab3fa0\"} 42\n",
		"vtier_vm_tdp_tlb_flush_seconds_total{domain=\"web\",uuid=\"4dea22b3-1d52-d8f3-2516-"
		"782e98ab3fa0\"} 2.5\n",
	};
	(void)state;
	/* a VM without a host budget's share has no share sample */
	assert_null(strstr(text, "vtier_vm_dram_share_bytes{domain=\"db"));
	/* a remote tier without a configured capacity has no capacity sample */
	assert_null(strstr(text, "vtier_host_tier_capacity_bytes{tier=\"far\""));
	/* a VM without a report's figures has no sample rather than a made-up 0 */
	assert_null(strstr(text, "vtier_vm_memory_bytes{domain=\"db"));
	assert_null(strstr(text, "vtier_vm_saving_ratio{domain=\"db"));
	/* a TLB counter not read now has no total; one that never saw a move, no per GiB */
	assert_null(strstr(text, "vtier_vm_kvm_remote_tlb_flushes_total{"));
	assert_null(strstr(text, "counter=\"kvm_remote_tlb_flush_requests\""));
	assert_null(strstr(text, "vtier_vm_host_tlb_shootdowns_total{domain=\"db"));
	/* a VM not over tdp (now) has no tdp flush sample, whatever its count */
	assert_null(strstr(text, "vtier_vm_tdp_tlb_flushes_total{domain=\"db"));
	assert_null(strstr(text, "vtier_vm_tdp_tlb_flush_seconds_total{domain=\"db"));
	assert_metrics(text, want, G_N_ELEMENTS(want));
}

/*
 * Per-node budgets: the host's share samples per node (label node), none
 * without it; a VM's share samples carry the node its DRAM counts against.
 */
static void test_share_per_node(void **state)
{
	g_autoptr(JsonParser) p1 = json_parser_new(), p2 = json_parser_new();
	struct vt_metrics_vm vms[1] = {
		{ .vm = "web", .domain = "web", .uuid = "", .ram_bytes = 1ULL << 30,
		  .stats = object(p1, "{\"mode\":\"auto\",\"windows\":3,\"share\":{\"state\":"
				  "\"granted\",\"node\":1,\"granted\":1048576,\"wanted\":2097152,"
				  "\"protected\":0,\"why\":\"earned\",\"rounds\":2}}"),
		  .report = object(p2, "{\"tiers\":[]}") },
	};
	struct vt_tiers tiers = { .nr = 1, .tier = { { .name = "dram", .nodes = { 0, 1 },
						      .nr_nodes = 2 } } };
	struct vt_metrics_host host = {
		.name = "h", .tiers = &tiers, .share_on = true, .share_budget = 3ULL << 30,
		.share_granted = 5ULL << 20, .share_rounds = 2, .share_nodes = 2,
		.share_node = { 0, 1 }, .share_node_budget = { 1ULL << 30, 2ULL << 30 },
		.share_node_granted = { 4ULL << 20, 1ULL << 20 }, .share_node_waiting = { 7, 0 },
	};
	struct vt_metrics_daemon dm = { .host = &host };
	g_autofree char *text = vt_metrics_write(&dm, vms, 1);
	static const char *const want[] = {
		"vtier_host_dram_share_bytes{kind=\"budget\",node=\"0\"} 1073741824\n",
		"vtier_host_dram_share_bytes{kind=\"granted\",node=\"0\"} 4194304\n",
		"vtier_host_dram_share_bytes{kind=\"waiting\",node=\"0\"} 7\n",
		"vtier_host_dram_share_bytes{kind=\"budget\",node=\"1\"} 2147483648\n",
		"vtier_host_dram_share_bytes{kind=\"granted\",node=\"1\"} 1048576\n",
		"vtier_vm_dram_share_bytes{domain=\"web\",uuid=\"\",kind=\"granted\",why=\"earned\","
		"node=\"1\"} 1048576\n",
	};
	(void)state;
	/* the host's sums are not samples of their own: a sum over node would count twice */
	assert_null(strstr(text, "vtier_host_dram_share_bytes{kind=\"budget\"}"));
	assert_metrics(text, want, G_N_ELEMENTS(want));
}

/* promtool does refuse what is wrong: the check above can fail. */
static void test_promtool_refuses(void **state)
{
	g_autofree char *why = NULL;
	int ret = promtool("# TYPE vtier_x counter\nvtier_x{a=\"b} 1\n", &why);

	(void)state;
	if (ret < 0)
		skip();
	assert_int_equal(ret, 1);
}

static char *build_text(void *arg)
{
	(*(int *)arg)++;
	return g_strdup("# TYPE vtier_vms gauge\nvtier_vms 0\n");
}

struct client {
	uint16_t port;
	const char *request;
	char reply[4096];
	gint done;
};

static gpointer client_run(gpointer data)
{
	struct client *c = data;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(c->port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t off = 0;
	ssize_t n;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    write(fd, c->request, strlen(c->request)) == (ssize_t)strlen(c->request))
		while (off < sizeof(c->reply) - 1 &&
		       (n = read(fd, c->reply + off, sizeof(c->reply) - 1 - off)) > 0)
			off += (size_t)n;
	c->reply[off] = '\0';
	close(fd);
	g_atomic_int_set(&c->done, 1);
	return NULL;
}

/* Run @request against the server while the loop builds what it asks. */
static void http(uint16_t port, const char *request, char *reply, size_t len)
{
	struct client c = { .port = port, .request = request };
	GThread *t = g_thread_new("client", client_run, &c);
	gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

	while (!g_atomic_int_get(&c.done) && g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
	g_thread_join(t);
	g_strlcpy(reply, c.reply, len);
}

static void test_http(void **state)
{
	int builds = 0;
	g_autoptr(GError) e = NULL;
	struct vt_metrics_http *m = vt_metrics_http_new("127.0.0.1:0", build_text, &builds, &e);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char reply[4096];
	int silent;

	(void)state;
	assert_non_null(m);
	/* a client that connects and says nothing holds nobody up */
	sa.sin_port = htons(vt_metrics_http_port(m));
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	silent = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(silent, (struct sockaddr *)&sa, sizeof(sa)), 0);

	http(vt_metrics_http_port(m), "GET /metrics HTTP/1.0\r\n\r\n", reply, sizeof(reply));
	assert_true(g_str_has_prefix(reply, "HTTP/1.0 200") || g_str_has_prefix(reply, "HTTP/1.1 200"));
	assert_non_null(strstr(reply, "text/plain; version=0.0.4"));
	assert_non_null(strstr(reply, "\r\n\r\n# TYPE vtier_vms gauge\nvtier_vms 0\n"));
	assert_int_equal(builds, 1);
	http(vt_metrics_http_port(m), "HEAD /metrics HTTP/1.0\r\n\r\n", reply, sizeof(reply));
	assert_non_null(strstr(reply, " 200 "));
	assert_null(strstr(reply, "vtier_vms 0"));
	http(vt_metrics_http_port(m), "GET /other HTTP/1.0\r\n\r\n", reply, sizeof(reply));
	assert_non_null(strstr(reply, " 404 "));
	http(vt_metrics_http_port(m), "POST /metrics HTTP/1.0\r\nContent-Length: 1\r\n\r\nx",
	     reply, sizeof(reply));
	assert_non_null(strstr(reply, " 405 "));
	assert_non_null(strstr(reply, "Allow: GET, HEAD"));
	assert_int_equal(builds, 2);
	close(silent);
	vt_metrics_http_free(m);
}

/*
 * The server goes while a scrape waits for the loop: the scrape ends (a 503,
 * or the connection closed if the server stopped first), the build never
 * runs on a freed server, nothing leaks (the sanitizer build).
 */
static void test_http_free_in_flight(void **state)
{
	int builds = 0;
	struct vt_metrics_http *m = vt_metrics_http_new("127.0.0.1:0", build_text, &builds, NULL);
	struct client c = { .request = "GET /metrics HTTP/1.0\r\n\r\n" };
	GThread *t;

	(void)state;
	assert_non_null(m);
	c.port = vt_metrics_http_port(m);
	t = g_thread_new("client", client_run, &c);
	/* the build is queued on the loop, which does not run */
	for (int i = 0; i < 200 && !g_main_context_pending(NULL); i++)
		g_usleep(5000);
	assert_true(g_main_context_pending(NULL));
	vt_metrics_http_free(m);
	g_thread_join(t);
	assert_true(!c.reply[0] || strstr(c.reply, " 503 "));
	while (g_main_context_iteration(NULL, FALSE))
		;
	assert_int_equal(builds, 0);
}

/* The store's log-linear buckets as Prometheus buckets: never a sample above le. */
static void test_latency_buckets(void **state)
{
	struct vt_latency_hist h = { 0 };
	static const uint64_t samples[] = { 3, 900, 1000, 1001, 4999, 5000, 70000, 1ULL << 40 };
	uint64_t sum = 0;

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(samples); i++) {
		vt_latency_add(&h, samples[i]);
		sum += samples[i];
	}
	assert_int_equal(vt_latency_count_le(&h, 2), 0);
	assert_int_equal(vt_latency_count_le(&h, 3), 1);
	/* 1000 and 1001 share the bucket [960, 1023]: counted once all of it is <= le */
	assert_int_equal(vt_latency_count_le(&h, 1000), 2);
	assert_int_equal(vt_latency_count_le(&h, 1023), 4);
	assert_true(vt_latency_count_le(&h, 5000) <= 6);
	assert_int_equal(vt_latency_count_le(&h, 1000000), 7);
	assert_int_equal(vt_latency_count_le(&h, UINT64_MAX), 8);
	assert_true(vt_latency_sum_estimate(&h) > sum / 2 && vt_latency_sum_estimate(&h) < sum * 2);
}

static void test_listen_bad(void **state)
{
	static const char *const bad[] = { "", "9477", "localhost:9477", "1.2.3.4:70000",
					   "[::1]9477", "[::1:9477", "1.2.3.4:", "1.2.3.4:x" };

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;

		if (vt_metrics_http_new(bad[i], build_text, NULL, &e))
			fail_msg("accepted '%s'", bad[i]);
		assert_non_null(strstr(e->message, "ADDR:PORT"));
		/* a host name: said to be one, not merely malformed */
		if (strcmp(bad[i], "localhost:9477") == 0 &&
		    !strstr(e->message, "host names are not resolved, give an IP address"))
			fail_msg("'%s': %s", bad[i], e->message);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer),
		cmocka_unit_test(test_share_per_node),
		cmocka_unit_test(test_promtool_refuses),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_http_free_in_flight),
		cmocka_unit_test(test_latency_buckets),
		cmocka_unit_test(test_listen_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
