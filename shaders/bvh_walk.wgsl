// The compute walk of the scene: the BVH nodes at binding 0, walked per thread. Prepended
// with common.wgsl; kernels call `trace_any` and `trace_closest`, which ray_query.wgsl
// defines alike over an acceleration structure. Rust twins: src/bvh.rs (layout),
// src/trace/cpu.rs (walks).

@group(0) @binding(0) var<storage, read> nodes: array<BvhNode>;

// The BVH walk (twin of `walk` in src/trace/cpu.rs). `any`: stop at the first blocking hit.
// Otherwise improve on `best_in` with the closest hit; ties go to the lower triangle id.
// Same visiting order as the CPU walk (nearer child first), but leaf children are tested in
// place and only the farther inner child is pushed: private arrays are slow on GPUs (and on
// lavapipe), so this keeps stack traffic low.
fn walk(r: RayPrep, t_max: f32, mask: u32, any: bool, best_in: HitRecord) -> HitRecord {
    var best = best_in;
    if arrayLength(&nodes) == 0u {
        return best;
    }
    var limit = min(best.t, t_max);
    var stack_node: array<u32, STACK_SIZE>;
    var stack_near: array<f32, STACK_SIZE>;
    var sp = 0u;
    var node = 0u;
    loop {
        let n = nodes[node];
        let e = children_entry(r, n, limit);
        let first = select(0u, 1u, e.near.y < e.near.x);
        var next = EMPTY_CHILD;
        for (var k = 0u; k < 2u; k++) {
            let i = select(first, 1u - first, k == 1u);
            let near_i = e.near[i];
            // Padded like the slab test's far side: a box entered at the limit by rounding
            // can still hold a hit at the limit (a nearer one, or a tie with a lower id).
            if (e.mask & (1u << i)) == 0u || near_i > limit * BOX_PAD {
                continue;
            }
            let child = n.child[i];
            let count = n.count[i];
            if count > 0u {
                for (var t = child; t < child + count; t++) {
                    let tri = triangles[t];
                    if (tri.flags & mask) == 0u {
                        continue;
                    }
                    let d = intersect(r, tri, t_max);
                    if d > 0.0 && (any || d < best.t || (d == best.t && tri.id < best.triangle)) {
                        best = hit_record(r, tri, d);
                        if any {
                            return best;
                        }
                    }
                }
                limit = min(best.t, t_max);
            } else if next == EMPTY_CHILD {
                next = child;
            } else if sp < STACK_SIZE {
                stack_node[sp] = child;
                stack_near[sp] = near_i;
                sp++;
            }
        }
        if next != EMPTY_CHILD {
            node = next;
            continue;
        }
        // Pop, skipping subtrees that now start beyond the limit.
        var found = false;
        loop {
            if sp == 0u {
                break;
            }
            sp--;
            if stack_near[sp] <= limit * BOX_PAD {
                node = stack_node[sp];
                found = true;
                break;
            }
        }
        if !found {
            return best;
        }
    }
    return best;
}

// The any-hit walk of the `occluded` kernel: `walk` with `any` set, visiting the same nodes in
// the same order and giving the same answer. With `any` the limit stays at t_max until the walk
// returns, so no pushed subtree is ever skipped on pop and the entry distances need not be
// kept: the stack holds node indices only, half of `walk`'s stack traffic. (On lavapipe the
// occlusion kernel ran 5-15% faster with it on village.)
fn walk_any(r: RayPrep, t_max: f32, mask: u32) -> bool {
    if arrayLength(&nodes) == 0u {
        return false;
    }
    var stack: array<u32, STACK_SIZE>;
    var sp = 0u;
    var node = 0u;
    loop {
        let n = nodes[node];
        let e = children_entry(r, n, t_max);
        let first = select(0u, 1u, e.near.y < e.near.x);
        var next = EMPTY_CHILD;
        for (var k = 0u; k < 2u; k++) {
            let i = select(first, 1u - first, k == 1u);
            if (e.mask & (1u << i)) == 0u || e.near[i] > t_max {
                continue;
            }
            let child = n.child[i];
            let count = n.count[i];
            if count > 0u {
                for (var t = child; t < child + count; t++) {
                    let tri = triangles[t];
                    if (tri.flags & mask) != 0u && intersect(r, tri, t_max) > 0.0 {
                        return true;
                    }
                }
            } else if next == EMPTY_CHILD {
                next = child;
            } else if sp < STACK_SIZE {
                stack[sp] = child;
                sp++;
            }
        }
        if next != EMPTY_CHILD {
            node = next;
            continue;
        }
        if sp == 0u {
            return false;
        }
        sp--;
        node = stack[sp];
    }
    return false;
}

// Whether a triangle matching `mask` lies strictly between t = 0 and `t_max` along `r`.
fn trace_any(r: RayPrep, t_max: f32, mask: u32) -> bool {
    return walk_any(r, t_max, mask);
}

// The closest triangle matching `mask` before `t_max`, improving on `best` (ties to the lower
// triangle id).
fn trace_closest(r: RayPrep, t_max: f32, mask: u32, best: HitRecord) -> HitRecord {
    return walk(r, t_max, mask, false, best);
}
