// Brute force: every ray against every triangle, nearest hit kept.
// Mirrored by src/cpu/brute_force.rs. Prepended with types.wgsl, the intersection
// files and hit_list.wgsl.
//
// One invocation per ray. The workgroup loads triangles into workgroup memory one
// tile at a time, and every invocation tests its ray against the whole tile.
// Triangles are visited in increasing id order and a hit replaces the best one only
// when strictly nearer, so ties go to the lowest triangle id. When `accumulate` is
// set, the best hit so far comes from the hit buffer (earlier triangle chunks, all
// with lower ids), which keeps that rule across chunks.
//
// One dispatch covers at most GpuOptions::max_triangles_per_dispatch triangles
// (`tri_first .. tri_first + tri_count` of the bound buffer): some drivers (Mesa's
// llvmpipe) stop a loop after 65,535 iterations in total, which would silently skip
// triangles.
//
// Few rays leave a GPU mostly idle (one workgroup per 64 rays). Then the host
// splits the dispatch's triangles into rows of workgroups (params.chunk_size
// triangles each, row r from triangle r * chunk_size on): each row keeps its own
// nearest hit per ray in all_hits[r * ray_count + ray], and brute_force_merge then
// takes, per ray, the first nearest of the rows in row order (with the hit buffer's
// when `accumulate` is set) into `hits`: the same ties to the lowest id. Only for
// QUERY_CLOSEST and QUERY_ANY (QUERY_ALL keeps its lists in all_hits).
//
// QUERY (a pipeline constant) selects what is kept. QUERY_CLOSEST: the nearest hit,
// in `hits`. QUERY_ANY: the first accepted hit, in `hits` (which one is not defined; the host
// reads only whether there is one); a ray stops testing once it has one.
// QUERY_ALL: the `max_hits` nearest hits in the ray's slots of `all_hits` (see
// hit_list.wgsl) and the list state in `hits[ray].prim`. Each accepted triangle
// enters the list's loop and can move up to `max_hits - 1` listed hits, so the host
// gives such a dispatch `max_hits + 1` times fewer triangles, to stay under the loop
// limit above.

@group(0) @binding(0) var<uniform> params: TraceParams;
@group(0) @binding(1) var<storage, read> triangles: array<PackedTriangle>;
@group(0) @binding(2) var<storage, read> rays: array<Ray>;
@group(0) @binding(3) var<storage, read_write> hits: array<Hit>;
@group(0) @binding(4) var<storage, read_write> all_hits: array<Hit>;

const WORKGROUP_SIZE: u32 = 64u;

var<workgroup> tile: array<PackedTriangle, WORKGROUP_SIZE>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn brute_force(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let ray_index = gid.x;
    let in_range = ray_index < params.ray_count;
    // This row's triangles: the dispatch's (one row), or a chunk of them.
    let split = params.chunk_size != 0u;
    let row_first = gid.y * params.chunk_size;
    let tri_count = select(params.tri_count, min(params.chunk_size, params.tri_count - row_first), split);
    let tri_first = params.tri_first + row_first;
    let tri_base = params.tri_base + row_first;
    var ray: Ray;
    var best = Hit(params.miss_t, 0.0, 0.0, MISS);
    var state = 0u; // the list state of QUERY_ALL
    if in_range {
        ray = rays[ray_index];
        if params.accumulate != 0u && !split {
            best = hits[ray_index];
            if QUERY == QUERY_ALL {
                state = best.prim;
                best.prim = MISS;
            }
        }
    }
    // No more tests for this ray: out of range, or a hit found for QUERY_ANY.
    var done = !in_range || (QUERY == QUERY_ANY && best.prim != MISS);
    let first = ray_index * params.max_hits;
    let frame = ray_frame(ray, params.one);
    for (var base = 0u; base < tri_count; base += WORKGROUP_SIZE) {
        if base + lane < tri_count {
            tile[lane] = triangles[tri_first + base + lane];
        }
        workgroupBarrier();
        let count = min(WORKGROUP_SIZE, tri_count - base);
        // One loop per kind of query (QUERY is fixed when the pipeline is built, so
        // only one remains).
        if !done && QUERY == QUERY_ALL {
            for (var j = 0u; j < count; j++) {
                let c = intersect(ray, frame, tile[j], params.cull, best.t, params.one, MODE);
                if c.accepted {
                    list_insert(first, params.max_hits, &state, Hit(c.t, c.u, c.v, tri_base + base + j));
                }
            }
        } else if !done {
            for (var j = 0u; j < count; j++) {
                let c = intersect(ray, frame, tile[j], params.cull, best.t, params.one, MODE);
                if c.accepted {
                    best = Hit(c.t, c.u, c.v, tri_base + base + j);
                    if QUERY == QUERY_ANY {
                        done = true;
                        break;
                    }
                }
            }
        }
        workgroupBarrier();
    }
    if in_range {
        if split {
            all_hits[gid.y * params.ray_count + ray_index] = best;
        } else {
            hits[ray_index] = carried(best, state, params.miss_t);
        }
    }
}

// The rows of a split dispatch merged per ray (see above): the rows' count from the
// same params as the dispatch's.
@compute @workgroup_size(WORKGROUP_SIZE)
fn brute_force_merge(@builtin(global_invocation_id) gid: vec3<u32>) {
    let ray_index = gid.x;
    if ray_index >= params.ray_count {
        return;
    }
    var best = Hit(params.miss_t, 0.0, 0.0, MISS);
    if params.accumulate != 0u {
        best = hits[ray_index];
    }
    let rows = (params.tri_count + params.chunk_size - 1u) / params.chunk_size;
    for (var row = 0u; row < rows; row++) {
        let found = all_hits[row * params.ray_count + ray_index];
        // Strictly nearer (a miss's t is miss_t, +inf): an earlier row, of lower
        // ids, keeps a tie. For QUERY_ANY the rows hold a hit or none.
        if found.t < best.t {
            best = found;
        }
    }
    hits[ray_index] = best;
}
