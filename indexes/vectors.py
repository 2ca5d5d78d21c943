"""FAISS vector indexes, one per collection, derived from the embeddings stored in SQLite.

A saved index file is named after the store generation it reflects (`<collection>.g<generation>.faiss`),
written to a temporary file, fsynced and renamed, so a reader finds either a complete file for the
current generation or none, in which case it rebuilds from SQLite without re-embedding anything.

Small collections use exact search (a flat inner-product index). Above `VectorOptions.ann_threshold`
vectors the index becomes an IVF-Flat index (k-means lists, exact vectors inside them): it supports the
incremental adds and removals every document write needs (HNSW cannot remove), and a saved IVF file is
memory-mapped on load, so opening a large collection costs no rebuild and no full read. A mapped index
is copied into memory only when it is first modified.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import faiss
import numpy as np


@dataclass(frozen=True)
class VectorOptions:
    """How vector indexes are built and searched; defaults measured by `assistant bench retrieval`."""

    ann_threshold: int = 50_000  # vectors from which a collection gets an IVF index instead of a flat one
    nlist: int = 0  # IVF lists; 0 = automatic, the power of two nearest 2 * sqrt(n)
    nprobe: int = 32  # IVF lists visited per query: the recall / latency trade-off
    train_per_list: int = 40  # k-means training points per list (faiss wants at least 39)
    mmap: bool = True  # map saved IVF files instead of reading them whole


def auto_nlist(n: int) -> int:
    """The IVF list count for n vectors: a power of two near 2 * sqrt(n), between 16 and 65536."""
    target = max(16.0, 2.0 * math.sqrt(max(n, 1)))
    return int(min(65536, 2 ** round(math.log2(target))))


def bitmap_selector(allowed: np.ndarray) -> tuple[faiss.IDSelector, np.ndarray]:
    """An ID selector admitting exactly these ids (a bitmap over 0..max id), and the array to keep alive."""
    allowed = np.asarray(allowed, dtype=np.int64)
    size = int(allowed.max()) + 1 if len(allowed) else 1
    bits = np.zeros(size, dtype=bool)
    bits[allowed] = True
    packed = np.packbits(bits, bitorder="little")
    # The selector's size is the bitmap's length in bytes: ids past it are not members.
    return faiss.IDSelectorBitmap(len(packed), faiss.swig_ptr(packed)), packed


class VectorIndex:
    """Inner-product search over normalized vectors keyed by chunk id: flat (exact) or IVF-Flat."""

    def __init__(self, dim: int, index: faiss.Index | None = None, generation: int = -1, nprobe: int = 32) -> None:
        self.dim = dim
        self.index = index if index is not None else faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self.generation = generation
        self.nprobe = nprobe
        try:
            self._ivf: faiss.IndexIVF | None = faiss.extract_index_ivf(self.index)
        except RuntimeError:
            self._ivf = None

    def __len__(self) -> int:
        return int(self.index.ntotal)

    @property
    def ivf(self) -> faiss.IndexIVF | None:
        """The IVF index itself when this is an approximate index, else None."""
        return self._ivf

    @property
    def kind(self) -> str:
        return "ivf" if self.ivf is not None else "flat"

    @property
    def mapped(self) -> bool:
        """True while the lists are read from a memory-mapped file (read-only)."""
        ivf = self.ivf
        return ivf is not None and isinstance(faiss.downcast_InvertedLists(ivf.invlists), faiss.OnDiskInvertedLists)

    def _writable(self) -> None:
        """Copy memory-mapped lists into memory before the first modification (mapped lists are read-only)."""
        if not self.mapped:
            return
        ivf = self.ivf
        old = ivf.invlists
        new = faiss.ArrayInvertedLists(old.nlist, old.code_size)
        for lst in range(old.nlist):
            n = old.list_size(lst)
            if n:
                new.add_entries(lst, n, old.get_ids(lst), old.get_codes(lst))
        ivf.replace_invlists(new, True)
        new.this.disown()  # the index owns the lists now

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        if len(ids):
            self._writable()
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64))

    def remove(self, ids: np.ndarray | list[int]) -> None:
        if len(ids):
            self._writable()
            self.index.remove_ids(np.asarray(ids, dtype=np.int64))

    def search(
        self, query: np.ndarray, k: int, *, allowed: np.ndarray | None = None, nprobe: int | None = None
    ) -> list[tuple[int, float]]:
        """The k nearest chunk ids with their cosine similarity, best first.

        `allowed` restricts the search to those chunk ids with a FAISS ID selector, inside the scan.
        An IVF index visits every list when the allowed set is a small share of the index, so a
        narrow filter still finds its k nearest exactly instead of whatever the probed lists hold.
        """
        if len(self) == 0 or k <= 0 or (allowed is not None and len(allowed) == 0):
            return []
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        ivf = self.ivf
        probe = min(nprobe or self.nprobe, ivf.nlist) if ivf is not None else 0
        keep = None
        if allowed is not None:
            selector, keep = bitmap_selector(allowed)
            if ivf is not None:
                if len(allowed) * probe / ivf.nlist < 20 * k:  # too few allowed vectors in the probed lists
                    probe = ivf.nlist
                params = faiss.SearchParametersIVF(sel=selector, nprobe=probe)
            else:
                params = faiss.SearchParameters(sel=selector)
        elif ivf is not None:
            params = faiss.SearchParametersIVF(nprobe=probe)
        else:
            params = None
        # One query gains nothing from OpenMP threads, whose spin-wait after the search burns a second
        # core (measured: CPU time twice the wall time) that concurrent requests or a local engine
        # need. The setting is per calling thread in OpenMP, so index builds elsewhere keep theirs.
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            scores, ids = self.index.search(q, min(k, len(self)), params=params)
        finally:
            faiss.omp_set_num_threads(threads)
        del keep
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i != -1]

    def save(self, path: Path) -> None:
        """Write atomically: a temporary file, fsync, rename, fsync of the directory; on any failure (a full
        disk) no file is left."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        try:
            # Written through Python's file, whose every write raises on a full disk: FAISS's own writer
            # does not see a failed flush and would leave an empty file behind as if saved.
            with open(tmp, "wb") as fh:
                faiss.write_index(self.index, faiss.PyCallbackIOWriter(fh.write))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    @classmethod
    def load(cls, path: Path, generation: int, *, mmap: bool = False, nprobe: int = 32) -> "VectorIndex":
        """Read a saved index; with mmap, IVF lists stay in the file and pages load on first use."""
        index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP if mmap else 0)
        loaded = cls(index.d, index, generation, nprobe)
        if loaded.mapped:
            # Mapped lists "prefetch" the probed lists on 32 new threads per search by default: one
            # question then created and joined 32 threads (measured: 2-3x the CPU of the scan itself at
            # 100k-1M vectors, more CPU than wall time). The search thread pages the lists in itself.
            faiss.downcast_InvertedLists(loaded.ivf.invlists).prefetch_nthread = 0
        return loaded

    @classmethod
    def build(cls, ids: np.ndarray, vectors: np.ndarray, options: VectorOptions, generation: int = -1) -> "VectorIndex":
        """The right index for this many vectors: flat below the ANN threshold, IVF-Flat above it."""
        dim = vectors.shape[1]
        if len(ids) < max(options.ann_threshold, 1):
            index = cls(dim, generation=generation, nprobe=options.nprobe)
            index.add(ids, vectors)
            return index
        nlist = options.nlist or auto_nlist(len(ids))
        quantizer = faiss.IndexFlatIP(dim)
        ivf = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        ivf.own_fields = True
        quantizer.this.disown()
        ivf.cp.spherical = True  # centroids on the unit sphere, as the vectors are
        ivf.cp.niter = 10
        n_train = min(len(ids), nlist * options.train_per_list)
        sample = np.sort(np.random.default_rng(0).choice(len(ids), size=n_train, replace=False))
        ivf.train(np.ascontiguousarray(vectors[sample], dtype=np.float32))
        for start in range(0, len(ids), 65536):
            stop = start + 65536
            ivf.add_with_ids(
                np.ascontiguousarray(vectors[start:stop], dtype=np.float32), np.asarray(ids[start:stop], dtype=np.int64)
            )
        return cls(dim, ivf, generation, options.nprobe)

    def ids(self) -> np.ndarray:
        """The chunk ids the index holds (sorted)."""
        ivf = self.ivf
        if ivf is None:
            return np.sort(faiss.vector_to_array(self.index.id_map).astype(np.int64))
        lists = ivf.invlists
        parts = [faiss.rev_swig_ptr(lists.get_ids(i), lists.list_size(i)).copy()
                 for i in range(lists.nlist) if lists.list_size(i)]
        return np.sort(np.concatenate(parts).astype(np.int64)) if parts else np.zeros(0, np.int64)

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """All (ids, vectors) held by the index, to rebuild it as another kind without reading SQLite."""
        ivf = self.ivf
        if ivf is None:
            flat = faiss.downcast_index(self.index.index)
            ids = faiss.vector_to_array(self.index.id_map).astype(np.int64)
            vecs = faiss.rev_swig_ptr(flat.get_xb(), len(self) * self.dim).reshape(len(self), self.dim).copy()
            return ids, vecs
        parts_ids, parts_vecs = [], []
        lists = ivf.invlists
        for lst in range(lists.nlist):
            n = lists.list_size(lst)
            if n:
                parts_ids.append(faiss.rev_swig_ptr(lists.get_ids(lst), n).copy())
                codes = faiss.rev_swig_ptr(lists.get_codes(lst), n * lists.code_size).copy()
                parts_vecs.append(codes.view(np.float32).reshape(n, self.dim))
        if not parts_ids:
            return np.zeros(0, np.int64), np.zeros((0, self.dim), np.float32)
        return np.concatenate(parts_ids).astype(np.int64), np.concatenate(parts_vecs)


EmbeddingLoader = Callable[[int], tuple[np.ndarray, np.ndarray]]  # collection id -> (ids, vectors)
IdLoader = Callable[[int], np.ndarray]  # collection id -> its chunk ids in the store
VectorLoader = Callable[[list[int]], dict[int, np.ndarray]]  # chunk ids -> their stored vectors


class VectorIndexes:
    """The per-collection indexes of one data directory, loaded lazily and kept in step with the store."""

    def __init__(self, directory: Path, load_embeddings: EmbeddingLoader, options: VectorOptions | None = None,
                 *, load_ids: IdLoader | None = None, load_vectors: VectorLoader | None = None) -> None:
        self.directory = directory
        self._load_embeddings = load_embeddings
        self._load_ids = load_ids
        self._load_vectors = load_vectors
        self.catch_ups = 0  # how many times an index was brought forward by its difference (observable in tests)
        self.options = options or VectorOptions()
        self._indexes: dict[int, VectorIndex] = {}
        self._lock = threading.RLock()
        self.rebuilds = 0  # how many times an index was rebuilt from SQLite (observable in tests)

    def path_for(self, collection_id: int, generation: int) -> Path:
        return self.directory / f"{collection_id}.g{generation}.faiss"

    def get(self, collection_id: int, generation: int, dim: int) -> VectorIndex:
        """The index for this collection at this store generation: cached, loaded or rebuilt."""
        with self._lock:
            cached = self._indexes.get(collection_id)
            if cached is not None and cached.generation == generation:
                return cached
            path = self.path_for(collection_id, generation)
            index = None
            if path.exists():
                try:
                    index = VectorIndex.load(path, generation, mmap=self.options.mmap, nprobe=self.options.nprobe)
                except RuntimeError:
                    index = None
            if index is None:
                index = self._caught_up(collection_id, generation, cached)
            if index is None:
                index = self._rebuild(collection_id, generation, dim)
            index.nprobe = self.options.nprobe
            self._indexes[collection_id] = index
            return index

    def _caught_up(self, collection_id: int, generation: int, cached: VectorIndex | None) -> VectorIndex | None:
        """An older index of the collection (the cached one, else the newest file) brought to the store's
        rows by their difference: chunk ids are never reused, so the ids the store has and the index
        lacks are exactly what was added, and the reverse what was removed. None when there is no older
        index or the difference is most of the collection (a rebuild is then as cheap)."""
        if self._load_ids is None or self._load_vectors is None:
            return None
        index = cached
        if index is None:
            index = self._newest_file(collection_id)
        if index is None:
            return None
        in_store = np.sort(np.asarray(self._load_ids(collection_id), dtype=np.int64))
        held = index.ids()
        removed = np.setdiff1d(held, in_store, assume_unique=True)
        added = np.setdiff1d(in_store, held, assume_unique=True)
        if len(added) + len(removed) > max(1024, len(in_store) // 2):
            return None
        vectors: dict[int, np.ndarray] = {}
        for start in range(0, len(added), 4096):
            vectors.update(self._load_vectors(added[start:start + 4096].tolist()))
        added = np.array([i for i in added.tolist() if i in vectors], dtype=np.int64)
        index.remove(removed)
        if len(added):
            index.add(added, np.stack([vectors[int(i)] for i in added]))
        index.generation = generation
        self.catch_ups += 1
        return index

    def _newest_file(self, collection_id: int) -> VectorIndex | None:
        files = []
        for f in self.directory.glob(f"{collection_id}.g*.faiss"):
            gen = f.name.removeprefix(f"{collection_id}.g").removesuffix(".faiss")
            if gen.isdigit():
                files.append((int(gen), f))
        for gen, f in sorted(files, reverse=True):
            try:
                return VectorIndex.load(f, gen, mmap=self.options.mmap, nprobe=self.options.nprobe)
            except RuntimeError:
                continue
        return None

    def _rebuild(self, collection_id: int, generation: int, dim: int) -> VectorIndex:
        ids, vectors = self._load_embeddings(collection_id)
        if not len(ids):
            vectors = np.zeros((0, dim), np.float32)
        index = VectorIndex.build(ids, vectors, self.options, generation)
        self.rebuilds += 1
        return index

    def apply(
        self,
        collection_id: int,
        dim: int,
        old_generation: int,
        new_generation: int,
        removed: list[int],
        added_ids: np.ndarray,
        added_vectors: np.ndarray,
    ) -> None:
        """Bring the cached index from old_generation to new_generation after one committed write.

        When the cache was not at old_generation (another writer, or nothing loaded yet) it is
        dropped and the next `get` loads or rebuilds it.
        """
        with self._lock:
            index = self._indexes.get(collection_id)
            if index is None or index.generation != old_generation:
                self._indexes.pop(collection_id, None)
                return
            index.remove(removed)
            index.add(added_ids, added_vectors)
            index.generation = new_generation

    def _reshape(self, index: VectorIndex) -> VectorIndex:
        """The index rebuilt as the kind its size calls for: flat -> IVF past the threshold, or an IVF
        whose lists have become four times too few for its size re-trained."""
        n = len(index)
        ivf = index.ivf
        if ivf is None and n >= self.options.ann_threshold:
            ids, vecs = index.vectors()
        elif ivf is not None and not self.options.nlist and auto_nlist(n) >= 4 * ivf.nlist:
            ids, vecs = index.vectors()
        else:
            return index
        return VectorIndex.build(ids, vecs, self.options, index.generation)

    def save(self, collection_id: int) -> None:
        """Persist the cached index under its generation and remove older files of the collection.

        This is also where a collection that grew past the ANN threshold gets its IVF index: saving
        happens after a batch of writes, not on every document.
        """
        with self._lock:
            index = self._indexes.get(collection_id)
            if index is None:
                return
            path = self.path_for(collection_id, index.generation)
            reshaped = self._reshape(index)
            if reshaped is not index:
                self._indexes[collection_id] = index = reshaped
                path.unlink(missing_ok=True)
            if not path.exists():
                index.save(path)
            for old in self.directory.glob(f"{collection_id}.g*.faiss"):
                if old != path:
                    old.unlink(missing_ok=True)

    def drop(self, collection_id: int) -> None:
        with self._lock:
            self._indexes.pop(collection_id, None)
            for old in self.directory.glob(f"{collection_id}.g*.faiss*"):
                old.unlink(missing_ok=True)
