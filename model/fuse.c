/* model/fuse.c: planning and running fused elementwise passes
 * (model/fuse.h). */
#include "model/fuse.h"

#include <fnmatch.h>
#include <stdint.h>
#include <string.h>

#include "core/parallel.h"

#define FUSE_BLOCK QP_FUSE_BLOCK
/* Below this many elements per thread, one thread is faster. */
#define FUSE_MIN_PER_THREAD QP_OP_PAR_MIN

bool qp_fuse_candidate(const struct qp_graph *g, int node)
{
    struct qp_op_ctx c = {g, node, &g->nodes[node], NULL, 0, NULL, NULL, NULL};
    struct qp_ew_step s;
    return qp_op_unary_ew(&c, &s) || qp_op_binary_ew(&c, &s);
}

/* ---- planning ----------------------------------------------------------- */

/* Index of the member computing value v, or -1. */
static int member_of_value(const struct qp_graph *g,
                           const struct qp_fuse_plan *p, int upto, int v)
{
    int prod = v >= 0 ? g->values[v].producer : -1;
    for (int j = 0; prod >= 0 && j < upto; j++)
        if (p->m[j].node == prod)
            return j;
    return -1;
}

static int member_of_node(const struct qp_fuse_plan *p, int node)
{
    for (int j = 0; j < p->n; j++)
        if (p->m[j].node == node)
            return j;
    return -1;
}

/* Inputs of member k that the step reads (Clip's bounds are folded in). */
static int step_inputs(const struct qp_fuse_member *m)
{
    return m->step.binary ? 2 : 1;
}

/* Adds to ext[*n_ext] the non-scalar inputs of member k from outside
 * segment seg; false when that would pass QP_FUSE_MAX_EXT. */
static bool count_ext(const struct qp_graph *g, const struct qp_fuse_plan *p,
                      int k, int seg, const struct qp_tensor *const *in,
                      int *ext, int *n_ext)
{
    const struct qp_fuse_member *m = &p->m[k];
    for (int i = 0; i < step_inputs(m); i++) {
        int j = m->src[i], v = g->nodes[m->node].in[i];
        if (j >= 0 && p->m[j].seg == seg)
            continue;
        size_t numel = j >= 0 ? qp_tdesc_numel(&p->m[j].desc)
                              : qp_tensor_numel(in[i]);
        if (numel == 1)
            continue;
        bool seen = false;
        for (int e = 0; e < *n_ext; e++)
            seen |= ext[e] == v;
        if (seen)
            continue;
        if (*n_ext == QP_FUSE_MAX_EXT)
            return false;
        ext[(*n_ext)++] = v;
    }
    return true;
}

/* Fills member k (node) from its inputs; false when it cannot be fused. */
static bool plan_member(const struct qp_graph *g, struct qp_fuse_plan *p,
                        int k, int node, qp_fuse_value_fn value, void *ctx,
                        const struct qp_tensor **in)
{
    const struct qp_node *n = &g->nodes[node];
    struct qp_fuse_member *m = &p->m[k];
    struct qp_tensor views[3];
    if (n->n_in > 3 || n->n_out != 1 || n->out[0] < 0)
        return false;
    m->node = node;
    m->src[0] = m->src[1] = -1;
    for (int i = 0; i < n->n_in; i++) {
        int v = n->in[i], j = member_of_value(g, p, k, v);
        in[i] = NULL;
        if (v < 0)
            continue;
        if (j >= 0) {
            /* a descriptor: the value does not exist yet */
            memset(&views[i], 0, sizeof views[i]);
            views[i].dtype = p->m[j].desc.dtype;
            views[i].ndim = p->m[j].desc.ndim;
            memcpy(views[i].shape, p->m[j].desc.shape, sizeof views[i].shape);
            in[i] = &views[i];
            if (i < 2)
                m->src[i] = j;
        } else if (!(in[i] = value(ctx, v))) {
            return false;
        }
    }
    struct qp_op_ctx c = {g, node, n, in, n->n_in, NULL, NULL, NULL};
    if (!qp_op_unary_ew(&c, &m->step) && !qp_op_binary_ew(&c, &m->step))
        return false;
    if (n->def->infer(&c, &m->desc, NULL) || m->desc.dtype != QP_DTYPE_F32)
        return false;
    /* the descriptors only lived for inference; outside inputs stay */
    for (int i = 0; i < n->n_in; i++)
        if (i < 2 && m->src[i] >= 0)
            in[i] = NULL;
    return true;
}

static bool captured(const struct qp_graph *g, int node, const char *capture)
{
    return capture &&
           fnmatch(capture, g->values[g->nodes[node].out[0]].name, 0) == 0;
}

static void mark_exports(const struct qp_graph *g, struct qp_fuse_plan *p,
                         const char *capture)
{
    for (int j = 0; j < p->n; j++) {
        const struct qp_value *val = &g->values[g->nodes[p->m[j].node].out[0]];
        bool ex = val->is_output || val->n_consumers == 0 ||
                  captured(g, p->m[j].node, capture);
        for (int c = 0; !ex && c < val->n_consumers; c++) {
            int k = member_of_node(p, val->consumers[c]);
            ex = k < 0 || p->m[k].seg != p->m[j].seg;
        }
        p->m[j].exported = ex;
    }
}

int qp_fuse_plan(const struct qp_graph *g, const int *nodes, int len,
                 qp_fuse_value_fn value, void *ctx, const char *capture,
                 struct qp_fuse_plan *p)
{
    int ext[QP_FUSE_MAX_EXT], n_ext = 0;
    p->n = 0;
    p->n_seg = 0;
    for (int k = 0; k < len && k < QP_FUSE_MAX_NODES; k++) {
        const struct qp_tensor *in[3];
        if (!plan_member(g, p, k, nodes[k], value, ctx, in))
            break;
        struct qp_fuse_member *m = &p->m[k];
        /* a captured value ends its segment: it is handed over and freed
         * before the next one is computed, as when nodes run alone, so
         * capturing everything never holds a whole segment's values */
        int cur = p->n_seg - 1;
        bool join = cur >= 0 && !captured(g, nodes[k - 1], capture) &&
                    qp_tdesc_equal(&m->desc, &p->m[p->seg_first[cur]].desc);
        if (join) {
            m->seg = cur;
            int save = n_ext;
            join = count_ext(g, p, k, cur, in, ext, &n_ext);
            if (!join)
                n_ext = save;
        }
        if (!join) {
            cur = p->n_seg++;
            p->seg_first[cur] = k;
            p->seg_count[cur] = 0;
            m->seg = cur;
            n_ext = 0;
            count_ext(g, p, k, cur, in, ext, &n_ext); /* <= 2 inputs fit */
        }
        p->seg_count[cur]++;
        p->n = k + 1;
    }
    mark_exports(g, p, capture);
    return p->n;
}

/* ---- the pass ----------------------------------------------------------- */

/* Pointer and vector flag of operand o for the block at output element
 * pos (column col of its row, ext offsets off). */
static const float *operand(const struct qp_fuse_pass *vm,
                            const struct qp_fuse_opd *o,
                            float (*regs)[FUSE_BLOCK], size_t pos, size_t col,
                            const int64_t *off, bool *vec)
{
    switch (o->kind) {
    case QP_FUSE_REG:
        *vec = true;
        return vm->out[o->idx] ? vm->out[o->idx] + pos : regs[o->idx];
    case QP_FUSE_ONE:
        *vec = false;
        return o->one;
    case QP_FUSE_EXT: {
        int64_t s = vm->bc.stride[o->idx][vm->bc.nd - 1];
        *vec = s != 0;
        return vm->ext[o->idx] + off[o->idx] + (int64_t)col * s;
    }
    }
    return NULL;
}

/* Steps a chain of kind covers. */
static int chain_steps(enum qp_fuse_chain_kind kind)
{
    return kind == QP_FUSE_CHAIN_HSWISH ? 4 : kind == QP_FUSE_CHAIN_AFFINE ? 2 : 1;
}

/* Runs the chain at step k over the block (its last step's value into
 * that step's destination); false, running nothing, when its x is not a
 * vector there (a broadcast row), which the steps then handle. */
static bool run_chain(const struct qp_fuse_pass *vm, int k,
                      float (*regs)[FUSE_BLOCK], size_t pos, size_t col,
                      const int64_t *off, size_t n)
{
    const struct qp_fuse_chain *c = &vm->chain[k];
    bool xv;
    const float *x = operand(vm, &c->x, regs, pos, col, off, &xv);
    if (!xv)
        return false;
    int last = k + chain_steps(c->kind) - 1;
    float *dst = vm->out[last] ? vm->out[last] + pos : regs[last];
    if (c->kind == QP_FUSE_CHAIN_HSWISH)
        vm->k->hswish_chain(x, *c->c0, vm->step[k + 1].alpha,
                            vm->step[k + 1].beta, c->div, *c->c1, dst, n);
    else
        vm->k->affine(x, *c->c0, *c->c1, dst, n);
    return true;
}

void qp_fuse_pass_range(const struct qp_fuse_pass *vm, size_t b, size_t e)
{
    float regs[QP_FUSE_MAX_NODES][FUSE_BLOCK];
    int64_t off[QP_FUSE_MAX_EXT] = {0};
    size_t inner = vm->bc.inner;
    if (b >= e)
        return;
    /* the row and column of pos, advanced without dividing (a Conv's
     * epilogue calls this for short ranges) */
    size_t row = b / inner, col = b % inner;
    qp_bcast_row(&vm->bc, row, off);
    for (size_t pos = b; pos < e;) {
        if (col == inner) {
            col = 0;
            qp_bcast_row(&vm->bc, ++row, off);
        }
        size_t n = inner - col < e - pos ? inner - col : e - pos;
        if (n > FUSE_BLOCK)
            n = FUSE_BLOCK;
        for (int k = 0; k < vm->n; k++) {
            const struct qp_ew_step *s = &vm->step[k];
            float *dst = vm->out[k] ? vm->out[k] + pos : regs[k];
            bool av, bv;
            if (vm->chain[k].kind && run_chain(vm, k, regs, pos, col, off, n)) {
                k += chain_steps(vm->chain[k].kind) - 1;
                continue;
            }
            const float *a = operand(vm, &vm->in[k][0], regs, pos, col, off, &av);
            if (s->binary) {
                const float *bp = operand(vm, &vm->in[k][1], regs, pos, col,
                                          off, &bv);
                vm->k->binary(s->op, a, av, bp, bv, dst, n);
            } else if (av) {
                vm->k->unary(s->unary, s->alpha, s->beta, a, dst, n);
            } else {
                /* a broadcast single value: compute once, then fill */
                vm->k->unary(s->unary, s->alpha, s->beta, a, dst, 1);
                for (size_t i = 1; i < n; i++)
                    dst[i] = dst[0];
            }
        }
        pos += n;
        col += n;
    }
}

/* A pass over the pool: blocks of elements (whole FUSE_BLOCKs) go to
 * whichever share asks first, so a share that starts late takes fewer. */
struct vm_share {
    const struct qp_fuse_pass *vm;
    struct qp_claim claim;
    size_t block;
};

static void vm_job(void *ctx, int t, int nt)
{
    struct vm_share *s = ctx;
    size_t b, e;
    (void)t;
    (void)nt;
    while (qp_claim_next(&s->claim, &b, &e))
        qp_fuse_pass_range(s->vm, b * s->block,
                           e * s->block < s->vm->total ? e * s->block
                                                       : s->vm->total);
}

/* ---- chains (struct qp_fuse_chain) ---------------------------------------- */

static bool opd_reg(const struct qp_fuse_opd *o, int idx)
{
    return o->kind == QP_FUSE_REG && o->idx == idx;
}

static bool opd_same(const struct qp_fuse_opd *a, const struct qp_fuse_opd *b)
{
    return a->kind == b->kind && a->idx == b->idx && a->one == b->one;
}

/* True when a step from `from` on reads member `idx`'s block. */
static bool reg_read_from(const struct qp_fuse_pass *vm, int from, int idx)
{
    for (int j = from; j < vm->n; j++)
        for (int i = 0; i < (vm->step[j].binary ? 2 : 1); i++)
            if (opd_reg(&vm->in[j][i], idx))
                return true;
    return false;
}

/* Of binary step k's operands, the index of the one that is `want`
 * (REG idx when want is NULL, else the same operand as *want), the other
 * being a single value when one_other; -1 when none is. */
static int pick(const struct qp_fuse_pass *vm, int k, enum qp_ew_binary op,
                const struct qp_fuse_opd *want, int idx, bool one_other)
{
    if (k >= vm->n || !vm->step[k].binary || vm->step[k].op != op)
        return -1;
    for (int i = 0; i < 2; i++) {
        const struct qp_fuse_opd *o = &vm->in[k][i], *other = &vm->in[k][1 - i];
        bool hit = want ? opd_same(o, want) : opd_reg(o, idx);
        if (hit && (!one_other || other->kind == QP_FUSE_ONE))
            return i;
    }
    return -1;
}

/* True when the values of the first n - 1 steps of the chain of n steps
 * at k are neither exported nor read by a step after it (inside it, the
 * patterns fix who reads what). */
static bool chain_private(const struct qp_fuse_pass *vm, int k, int n)
{
    for (int i = k; i < k + n - 1; i++)
        if (vm->out[i] || reg_read_from(vm, k + n, i))
            return false;
    return true;
}

/* When step k is op of a vector x and a single value, with n - 1 steps
 * after it: the index of x among its operands; else -1. */
static int chain_head(const struct qp_fuse_pass *vm, int k, enum qp_ew_binary op,
                      int n)
{
    if (k + n > vm->n)
        return -1;
    int xi = vm->in[k][0].kind == QP_FUSE_ONE ? 1 : 0;
    const struct qp_fuse_opd *x = &vm->in[k][xi];
    return x->kind != QP_FUSE_ONE && pick(vm, k, op, x, 0, true) == xi ? xi : -1;
}

/* The HardSwish chain at step k, if there is one. */
static bool find_hswish(const struct qp_fuse_pass *vm, int k,
                        struct qp_fuse_chain *c)
{
    int xi = chain_head(vm, k, QP_EW_ADD, 4);
    if (xi < 0)
        return false;
    const struct qp_fuse_opd *x = &vm->in[k][xi];
    const struct qp_ew_step *clip = &vm->step[k + 1];
    if (clip->binary || clip->unary != QP_EW_CLIP ||
        !opd_reg(&vm->in[k + 1][0], k) ||
        pick(vm, k + 2, QP_EW_MUL, x, 0, false) < 0 ||
        pick(vm, k + 2, QP_EW_MUL, NULL, k + 1, false) < 0)
        return false;
    int di = pick(vm, k + 3, QP_EW_DIV, NULL, k + 2, true);
    bool div = di == 0;
    if (!div && (di = pick(vm, k + 3, QP_EW_MUL, NULL, k + 2, true)) < 0)
        return false;
    if (!chain_private(vm, k, 4))
        return false;
    *c = (struct qp_fuse_chain){QP_FUSE_CHAIN_HSWISH, div, *x,
                                vm->in[k][1 - xi].one, vm->in[k + 3][1 - di].one};
    return true;
}

/* The affine chain at step k, if there is one. */
static bool find_affine(const struct qp_fuse_pass *vm, int k,
                        struct qp_fuse_chain *c)
{
    int xi = chain_head(vm, k, QP_EW_MUL, 2);
    if (xi < 0)
        return false;
    const struct qp_fuse_opd *x = &vm->in[k][xi];
    int ai = pick(vm, k + 1, QP_EW_ADD, NULL, k, true);
    if (ai < 0 || !chain_private(vm, k, 2))
        return false;
    *c = (struct qp_fuse_chain){QP_FUSE_CHAIN_AFFINE, false, *x,
                                vm->in[k][1 - xi].one, vm->in[k + 1][1 - ai].one};
    return true;
}

/* Marks the chains of struct qp_fuse_chain in vm's steps. */
static void find_chains(struct qp_fuse_pass *vm)
{
    memset(vm->chain, 0, sizeof vm->chain);
    for (int k = 0; k < vm->n; k++) {
        struct qp_fuse_chain *c = &vm->chain[k];
        if (find_hswish(vm, k, c) || find_affine(vm, k, c))
            k += chain_steps(c->kind) - 1;
    }
}

void qp_fuse_prepare(const struct qp_graph *g, const struct qp_fuse_plan *p,
                     int s, qp_fuse_value_fn value, void *ctx,
                     struct qp_tensor *const *out, struct qp_fuse_pass *vm)
{
    int first = p->seg_first[s];
    const struct qp_tensor *ext[QP_FUSE_MAX_EXT];
    vm->n = p->seg_count[s];
    vm->n_ext = 0;
    vm->k = qp_ew_f32();
    for (int k = 0; k < vm->n; k++) {
        const struct qp_fuse_member *m = &p->m[first + k];
        vm->step[k] = m->step;
        vm->out[k] = out[k] ? out[k]->data : NULL;
        for (int i = 0; i < step_inputs(m); i++) {
            struct qp_fuse_opd *o = &vm->in[k][i];
            if (m->src[i] >= first) {
                *o = (struct qp_fuse_opd){QP_FUSE_REG, m->src[i] - first, NULL};
                continue;
            }
            const struct qp_tensor *t = value(ctx, g->nodes[m->node].in[i]);
            if (qp_tensor_numel(t) == 1) {
                *o = (struct qp_fuse_opd){QP_FUSE_ONE, 0, t->data};
                continue;
            }
            int e = 0;
            while (e < vm->n_ext && ext[e] != t)
                e++;
            if (e == vm->n_ext) { /* the plan counted at most QP_FUSE_MAX_EXT */
                ext[vm->n_ext] = t;
                vm->ext[vm->n_ext++] = t->data;
            }
            *o = (struct qp_fuse_opd){QP_FUSE_EXT, e, NULL};
        }
    }
    find_chains(vm);
    const struct qp_tdesc *d = &p->m[first].desc;
    vm->total = qp_tdesc_numel(d);
    qp_bcast_init(&vm->bc, d, ext, vm->n_ext);
}

void qp_fuse_run(const struct qp_graph *g, const struct qp_fuse_plan *p, int s,
                 qp_fuse_value_fn value, void *ctx,
                 struct qp_tensor *const *out, struct qp_pool *pool)
{
    struct qp_fuse_pass vm;
    qp_fuse_prepare(g, p, s, value, ctx, out, &vm);
    if (vm.total == 0)
        return;
    int nt = vm.total >= 2 * FUSE_MIN_PER_THREAD ? qp_pool_threads(pool) : 1;
    /* about eight blocks a thread */
    size_t per = (vm.total + 8 * (size_t)nt - 1) / (8 * (size_t)nt);
    struct vm_share sh = {&vm, {0},
                          (per + FUSE_BLOCK - 1) / FUSE_BLOCK * FUSE_BLOCK};
    qp_claim_init(&sh.claim, (vm.total + sh.block - 1) / sh.block, 1);
    qp_pool_run(pool, vm_job, &sh, nt);
}
