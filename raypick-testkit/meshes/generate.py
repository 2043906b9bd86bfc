#!/usr/bin/env python3
"""Writes the mesh fixtures of tests/mesh_loaders.rs (Python 3 standard library only).

Run from this directory: `python3 generate.py`. Every file is small and generated here.

- quads.*: the same two quads (four triangles after fan triangulation) in every
  format and variant; they must all load to the same triangles in the same order.
- hierarchy.gltf: a node tree with translation/rotation/scale and a matrix.
- modes.gltf: strip, fan, points, lines and non-indexed primitives.
- quantized.gltf: integer positions (KHR_mesh_quantization), plain and normalized.
"""
import base64
import json
import struct

# Two quads; the second one is tilted and has coordinates that are not exact in f32.
QUADS = [
    (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (1.0, 1.0, 0.0), (0.0, 1.0, 0.0),
    (0.1, 0.2, 1.5), (2.5, 0.2, 1.5), (2.5, 1.7, -1.25), (0.1, 1.7, -1.25),
]
POLYGONS = [(0, 1, 2, 3), (4, 5, 6, 7)]
# Fan triangulation from the first corner, in file order.
TRIANGLES = [t for p in POLYGONS for t in ((p[0], p[1], p[2]), (p[0], p[2], p[3]))]


def write(name, data):
    if isinstance(data, str):
        data = data.encode()
    with open(name, "wb") as f:
        f.write(data)


def obj():
    lines = ["# two quads as polygons", "o quads"]
    lines += ["v %r %r %r" % v for v in QUADS]
    lines += ["vn 0 0 1", "l 1 2"]
    lines += ["f " + " ".join("%d//1" % (i + 1) for i in p) for p in POLYGONS]
    write("quads.obj", "\n".join(lines) + "\n")


def ply_header(fmt, coord, extra_vertex="", extra=""):
    return (
        "ply\nformat %s 1.0\ncomment two quads\n"
        "element vertex %d\nproperty %s x\nproperty %s y\nproperty %s z\n%s"
        "element face %d\nproperty list uchar int vertex_indices\n%s"
        "end_header\n" % (fmt, len(QUADS), coord, coord, coord, extra_vertex,
                          len(POLYGONS), extra)
    )


def ply():
    # ASCII: an extra vertex property, an extra face list and an extra element.
    text = ply_header("ascii", "float", "property uchar red\n",
                      "property list uchar float texcoord\nelement edge 1\n"
                      "property int vertex1\nproperty int vertex2\n")
    text += "".join("%r %r %r 255\n" % v for v in QUADS)
    text += "".join("4 %s 2 0.5 0.5\n" % " ".join(map(str, p)) for p in POLYGONS)
    text += "0 1\n"
    write("quads_ascii.ply", text)
    for name, fmt, order, coord, code in [
        ("quads_binary_le.ply", "binary_little_endian", "<", "float", "f"),
        ("quads_binary_be.ply", "binary_big_endian", ">", "double", "d"),
    ]:
        data = ply_header(fmt, coord).encode()
        data += b"".join(struct.pack(order + code * 3, *v) for v in QUADS)
        data += b"".join(struct.pack(order + "B4i", 4, *p) for p in POLYGONS)
        write(name, data)


def stl():
    text = "solid first\n"
    for k, t in enumerate(TRIANGLES):
        if k == 2:  # a second solid in the same file
            text += "endsolid first\nsolid second\n"
        text += "  facet normal 0 0 0\n    outer loop\n"
        text += "".join("      vertex %r %r %r\n" % QUADS[i] for i in t)
        text += "    endloop\n  endfacet\n"
    write("quads_ascii.stl", text + "endsolid second\n")
    records = b"".join(
        struct.pack("<3f", 0, 0, 0)
        + b"".join(struct.pack("<3f", *QUADS[i]) for i in t)
        + b"\0\0"
        for t in TRIANGLES
    )
    count = struct.pack("<I", len(TRIANGLES))
    write("quads_binary.stl", b"binary STL".ljust(80, b" ") + count + records)
    write("quads_solid_header.stl", b"solid but binary".ljust(80, b" ") + count + records)


def pad4(data, fill=b"\0"):
    return data + fill * (-len(data) % 4)


def gltf_document(buffer, accessors, views, meshes, nodes, scenes, scene=0):
    doc = {
        "asset": {"version": "2.0", "generator": "raypick-testkit/meshes/generate.py"},
        "buffers": [buffer],
        "bufferViews": views,
        "accessors": accessors,
        "meshes": meshes,
        "nodes": nodes,
        "scenes": scenes,
    }
    if scene is not None:
        doc["scene"] = scene
    return doc


class Blob:
    """A buffer with views and accessors appended one by one."""

    def __init__(self):
        self.data = b""
        self.views = []
        self.accessors = []

    def add(self, raw, count, component, kind, stride=None, **extra):
        self.data = pad4(self.data)
        view = {"buffer": 0, "byteOffset": len(self.data), "byteLength": len(raw)}
        if stride:
            view["byteStride"] = stride
        self.views.append(view)
        self.data += raw
        accessor = {"bufferView": len(self.views) - 1, "componentType": component,
                    "count": count, "type": kind}
        accessor.update(extra)
        self.accessors.append(accessor)
        return len(self.accessors) - 1

    def positions(self, points, stride=None):
        lo = [min(p[i] for p in points) for i in range(3)]
        hi = [max(p[i] for p in points) for i in range(3)]
        # Interleave 4 padding bytes after each position when a stride is asked for.
        pad = b"\0" * ((stride or 12) - 12)
        raw = b"".join(struct.pack("<3f", *p) + pad for p in points)
        return self.add(raw, len(points), 5126, "VEC3", stride, min=lo, max=hi)

    def indices(self, values, component):
        code = {5121: "B", 5123: "H", 5125: "I"}[component]
        return self.add(struct.pack("<%d%s" % (len(values), code), *values), len(values),
                        component, "SCALAR")


def quads_gltf(component, stride=None):
    blob = Blob()
    pos = blob.positions(QUADS, stride)
    idx = blob.indices([i for t in TRIANGLES for i in t], component)
    meshes = [{"primitives": [{"attributes": {"POSITION": pos}, "indices": idx}]}]
    return blob, meshes


def gltf():
    blob, meshes = quads_gltf(5123)
    uri = "data:application/octet-stream;base64," + base64.b64encode(blob.data).decode()
    doc = gltf_document({"byteLength": len(blob.data), "uri": uri}, blob.accessors,
                        blob.views, meshes, [{"mesh": 0}], [{"nodes": [0]}])
    write("quads_embedded.gltf", json.dumps(doc, indent=1))

    blob, meshes = quads_gltf(5125, stride=16)
    doc = gltf_document({"byteLength": len(blob.data), "uri": "quads%20external.bin"},
                        blob.accessors, blob.views, meshes, [{"mesh": 0}], [{"nodes": [0]}])
    write("quads_external.gltf", json.dumps(doc, indent=1))
    write("quads external.bin", blob.data)

    blob, meshes = quads_gltf(5121)
    doc = gltf_document({"byteLength": len(blob.data)}, blob.accessors, blob.views, meshes,
                        [{"mesh": 0}], [{"nodes": [0]}])
    json_chunk = pad4(json.dumps(doc).encode(), b" ")
    bin_chunk = pad4(blob.data)
    body = struct.pack("<I4s", len(json_chunk), b"JSON") + json_chunk
    body += struct.pack("<I4s", len(bin_chunk), b"BIN\0") + bin_chunk
    write("quads.glb", struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body)


def hierarchy():
    """Node 0 (T, R, S) holds the triangle and has child 1 (matrix) holding it again;
    node 2 holds it too but is only in scene 1, which is not the default scene."""
    blob = Blob()
    pos = blob.positions([(1, 0, 0), (0, 1, 0), (0, 0, 1)])
    meshes = [{"primitives": [{"attributes": {"POSITION": pos}}]}]
    half = 0.5 ** 0.5
    nodes = [
        {"mesh": 0, "children": [1], "translation": [10, 0, 0],
         "rotation": [0, 0, half, half], "scale": [2, 2, 2]},
        {"mesh": 0, "matrix": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 5, 1]},
        {"mesh": 0},
    ]
    uri = "data:application/gltf-buffer;base64," + base64.b64encode(blob.data).decode()
    doc = gltf_document({"byteLength": len(blob.data), "uri": uri}, blob.accessors,
                        blob.views, meshes, nodes, [{"nodes": [0]}, {"nodes": [2]}])
    write("hierarchy.gltf", json.dumps(doc, indent=1))


def modes():
    """One mesh: a strip of 5 vertices (u8 indices), a fan of 5 (u16), points and
    lines (skipped), and a non-indexed list of 6 vertices; no default scene."""
    blob = Blob()
    pos = blob.positions([(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 2, 0),
                          (2, 0, 1), (3, 0, 1)])
    strip = blob.indices([0, 1, 2, 3, 4], 5121)
    fan = blob.indices([6, 5, 3, 2, 0], 5123)
    plain = blob.positions([(0, 0, 5), (1, 0, 5), (0, 1, 5), (0, 0, 6), (1, 0, 6), (0, 1, 6)])
    attrs = {"POSITION": pos}
    primitives = [
        {"attributes": attrs, "indices": strip, "mode": 5},
        {"attributes": attrs, "mode": 0},
        {"attributes": attrs, "indices": fan, "mode": 6},
        {"attributes": attrs, "indices": strip, "mode": 1},
        {"attributes": {"POSITION": plain}},
    ]
    uri = "data:application/octet-stream;base64," + base64.b64encode(blob.data).decode()
    doc = gltf_document({"byteLength": len(blob.data), "uri": uri}, blob.accessors,
                        blob.views, [{"primitives": primitives}], [{"mesh": 0}],
                        [{"nodes": [0]}], scene=None)
    write("modes.gltf", json.dumps(doc, indent=1))


def quantized():
    """u16 positions (not normalized) and normalized i8 positions, 8-byte strides."""
    blob = Blob()
    u16 = [(0, 0, 0), (2, 0, 0), (0, 3, 0)]
    plain = blob.add(b"".join(struct.pack("<3H2x", *p) for p in u16), 3, 5123, "VEC3", 8,
                     min=[0, 0, 0], max=[2, 3, 0])
    i8 = [(127, 0, 0), (0, -127, 0), (0, 0, -128)]
    normalized = blob.add(b"".join(struct.pack("<3b5x", *p) for p in i8), 3, 5120, "VEC3", 8,
                          normalized=True, min=[0, -127, -128], max=[127, 0, 0])
    primitives = [{"attributes": {"POSITION": plain}},
                  {"attributes": {"POSITION": normalized}}]
    uri = "data:application/octet-stream;base64," + base64.b64encode(blob.data).decode()
    doc = gltf_document({"byteLength": len(blob.data), "uri": uri}, blob.accessors,
                        blob.views, [{"primitives": primitives}], [{"mesh": 0}],
                        [{"nodes": [0]}])
    doc["extensionsUsed"] = doc["extensionsRequired"] = ["KHR_mesh_quantization"]
    write("quantized.gltf", json.dumps(doc, indent=1))


if __name__ == "__main__":
    obj()
    ply()
    stl()
    gltf()
    hierarchy()
    modes()
    quantized()
