//go:build ibverbs && linux && cgo

// shim.c: see shim.h.
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include "shim.h"

int gshim_post_send(struct ibv_qp *qp, struct gsend *wrs, int n, struct ibv_sge *sges, int *bad) {
	struct ibv_send_wr wr[GSHIM_BATCH];
	struct ibv_send_wr *badwr = NULL;
	int i, rc;
	if (n <= 0 || n > GSHIM_BATCH) return EINVAL;
	memset(wr, 0, sizeof(wr[0]) * n);
	for (i = 0; i < n; i++) {
		wr[i].wr_id = wrs[i].wr_id;
		wr[i].sg_list = wrs[i].nsge ? &sges[wrs[i].sge_off] : NULL;
		wr[i].num_sge = wrs[i].nsge;
		wr[i].opcode = (enum ibv_wr_opcode)wrs[i].opcode;
		wr[i].send_flags = wrs[i].send_flags;
		switch (wr[i].opcode) {
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_READ:
			wr[i].wr.rdma.remote_addr = wrs[i].remote_addr;
			wr[i].wr.rdma.rkey = wrs[i].rkey;
			break;
		case IBV_WR_SEND_WITH_INV:
			wr[i].invalidate_rkey = wrs[i].invalidate_rkey;
			// libsiw (rdma-core 44) takes the STag to invalidate from
			// wr.rdma.rkey, not from invalidate_rkey; other providers
			// ignore wr.rdma for sends.
			wr[i].wr.rdma.rkey = wrs[i].invalidate_rkey;
			break;
		default:
			break;
		}
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	rc = ibv_post_send(qp, wr, &badwr);
	*bad = rc && badwr ? (int)(badwr - wr) : (rc ? 0 : n);
	return rc;
}

int gshim_post_recv(struct ibv_qp *qp, struct grecv *wrs, int n, struct ibv_sge *sges, int *bad) {
	struct ibv_recv_wr wr[GSHIM_BATCH];
	struct ibv_recv_wr *badwr = NULL;
	int i, rc;
	if (n <= 0 || n > GSHIM_BATCH) return EINVAL;
	memset(wr, 0, sizeof(wr[0]) * n);
	for (i = 0; i < n; i++) {
		wr[i].wr_id = wrs[i].wr_id;
		wr[i].sg_list = wrs[i].nsge ? &sges[wrs[i].sge_off] : NULL;
		wr[i].num_sge = wrs[i].nsge;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	rc = ibv_post_recv(qp, wr, &badwr);
	*bad = rc && badwr ? (int)(badwr - wr) : (rc ? 0 : n);
	return rc;
}

int gshim_poll_cq(struct ibv_cq *cq, int n, struct gwc *out) {
	struct ibv_wc wc[GSHIM_BATCH];
	int i, got;
	if (n > GSHIM_BATCH) n = GSHIM_BATCH;
	got = ibv_poll_cq(cq, n, wc);
	for (i = 0; i < got; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].vendor_err = wc[i].vendor_err;
		out[i].byte_len = wc[i].byte_len;
		out[i].qp_num = wc[i].qp_num;
		out[i].wc_flags = wc[i].wc_flags;
		out[i].invalidated_rkey = (wc[i].wc_flags & IBV_WC_WITH_INV) ? wc[i].invalidated_rkey : 0;
	}
	return got;
}

int gshim_req_notify_cq(struct ibv_cq *cq) { return ibv_req_notify_cq(cq, 0); }

// gshim_get_cq_event takes one event off a non-blocking completion channel
// and acknowledges it: 0 on success, EAGAIN when there is none.
int gshim_get_cq_event(struct ibv_comp_channel *ch) {
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(ch, &cq, &ctx)) return errno ? errno : EIO;
	ibv_ack_cq_events(cq, 1);
	return 0;
}

int gshim_get_cm_event(struct rdma_event_channel *ch, struct gcmev *out) {
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev)) return errno ? errno : EIO;
	gshim_copy_cm_event(ev, out);
	rdma_ack_cm_event(ev);
	return 0;
}

void gshim_copy_cm_event(const struct rdma_cm_event *ev, struct gcmev *out) {
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	out->event = ev->event;
	out->status = ev->status;
	out->responder_resources = 0;
	out->initiator_depth = 0;
	out->private_data_len = 0;
	if (ev->id && ev->id->ps != RDMA_PS_UDP) {
		out->responder_resources = ev->param.conn.responder_resources;
		out->initiator_depth = ev->param.conn.initiator_depth;
		if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
			out->private_data_len = ev->param.conn.private_data_len;
			memcpy(out->private_data, ev->param.conn.private_data, out->private_data_len);
		}
	}
}

int gshim_set_nonblock(int fd) {
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return errno;
	return 0;
}

int gshim_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
	uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t max_send_sge, uint32_t max_recv_sge) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof(a));
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 0;
	a.cap.max_send_wr = max_send_wr;
	a.cap.max_recv_wr = max_recv_wr;
	a.cap.max_send_sge = max_send_sge;
	a.cap.max_recv_sge = max_recv_sge;
	if (rdma_create_qp(id, pd, &a)) return errno ? errno : EIO;
	return 0;
}

int gshim_connect(struct rdma_cm_id *id, const void *pd, int pdlen, int ird, int ord, int accept) {
	struct rdma_conn_param p;
	int rc;
	memset(&p, 0, sizeof(p));
	p.private_data = pdlen ? pd : NULL;
	p.private_data_len = (uint8_t)pdlen;
	p.responder_resources = (uint8_t)ird;
	p.initiator_depth = (uint8_t)ord;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	rc = accept ? rdma_accept(id, &p) : rdma_connect(id, &p);
	if (rc) return errno ? errno : EIO;
	return 0;
}

int gshim_qp_to_error(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int gshim_query_rd_atomic(struct ibv_qp *qp, int *ord, int *ird) {
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rc;
	memset(&a, 0, sizeof(a));
	rc = ibv_query_qp(qp, &a, IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC, &ia);
	if (rc) return rc;
	*ord = a.max_rd_atomic;
	*ird = a.max_dest_rd_atomic;
	return 0;
}

static int lookup(const char *host, const char *port, struct addrinfo **res) {
	struct addrinfo hints;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	return getaddrinfo(host && *host ? host : NULL, port, &hints, res) ? EINVAL : 0;
}

int gshim_resolve_addr(struct rdma_cm_id *id, const char *host, const char *port, int timeout_ms) {
	struct addrinfo *res;
	int rc = lookup(host, port, &res);
	if (rc) return rc;
	rc = rdma_resolve_addr(id, NULL, res->ai_addr, timeout_ms) ? (errno ? errno : EIO) : 0;
	freeaddrinfo(res);
	return rc;
}

int gshim_bind_addr(struct rdma_cm_id *id, const char *host, const char *port) {
	struct addrinfo *res;
	int rc = lookup(host, port, &res);
	if (rc) return rc;
	rc = rdma_bind_addr(id, res->ai_addr) ? (errno ? errno : EIO) : 0;
	freeaddrinfo(res);
	return rc;
}

int gshim_local_port(struct rdma_cm_id *id) { return ntohs(rdma_get_src_port(id)); }

int gshim_addr_string(struct rdma_cm_id *id, int peer, char *buf, int len) {
	struct sockaddr *sa = peer ? rdma_get_peer_addr(id) : rdma_get_local_addr(id);
	char host[INET6_ADDRSTRLEN];
	int port;
	const void *a;
	if (sa->sa_family == AF_INET) {
		a = &((struct sockaddr_in *)sa)->sin_addr;
		port = ntohs(((struct sockaddr_in *)sa)->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		a = &((struct sockaddr_in6 *)sa)->sin6_addr;
		port = ntohs(((struct sockaddr_in6 *)sa)->sin6_port);
	} else {
		return EAFNOSUPPORT;
	}
	if (!inet_ntop(sa->sa_family, a, host, sizeof(host))) return errno;
	if (sa->sa_family == AF_INET6)
		snprintf(buf, len, "[%s]:%d", host, port);
	else
		snprintf(buf, len, "%s:%d", host, port);
	return 0;
}

const char *gshim_dev_name(struct ibv_context *ctx) { return ibv_get_device_name(ctx->device); }

int gshim_transport(struct ibv_context *ctx) { return ctx->device->transport_type; }

int gshim_query_device(struct ibv_context *ctx, int *max_qp, int *max_qp_wr, int *max_sge, int *max_cq,
	int *max_cqe, int *max_mr, int *max_qp_rd_atom, int *max_qp_init_rd_atom, uint64_t *max_mr_size, int *phys_port_cnt) {
	struct ibv_device_attr a;
	int rc = ibv_query_device(ctx, &a);
	if (rc) return rc;
	*max_qp = a.max_qp;
	*max_qp_wr = a.max_qp_wr;
	*max_sge = a.max_sge;
	*max_cq = a.max_cq;
	*max_cqe = a.max_cqe;
	*max_mr = a.max_mr;
	*max_qp_rd_atom = a.max_qp_rd_atom;
	*max_qp_init_rd_atom = a.max_qp_init_rd_atom;
	*max_mr_size = a.max_mr_size;
	*phys_port_cnt = a.phys_port_cnt;
	return 0;
}

int gshim_port_state(struct ibv_context *ctx, int port, int *state) {
	struct ibv_port_attr a;
	int rc = ibv_query_port(ctx, (uint8_t)port, &a);
	if (rc) return rc;
	*state = a.state;
	return 0;
}

int gshim_get_async_event(struct ibv_context *ctx, struct gasync *out) {
	struct ibv_async_event ev;
	if (ibv_get_async_event(ctx, &ev)) return errno ? errno : EIO;
	out->type = ev.event_type;
	out->port = 0;
	out->cq = NULL;
	out->qp = NULL;
	switch (ev.event_type) {
	case IBV_EVENT_CQ_ERR:
		out->cq = ev.element.cq;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		out->qp = ev.element.qp;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		out->port = ev.element.port_num;
		break;
	default:
		break;
	}
	ibv_ack_async_event(&ev);
	return 0;
}
