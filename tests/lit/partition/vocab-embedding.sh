# Vocabulary-parallel embedding: a table split over tp along V (rows). The
# ids are first checked against the whole vocabulary (check_ids: an id
# outside it fails as the unsplit embedding does, where every rank would
# otherwise take it for another's and give zeros). Each
# rank compares the ids with the rows it holds (iota over V sliced at its
# coordinate: no traffic), looks up those ids' rows and zeros the others: a
# result partial over tp, resolved by an all_reduce of the local result
# (%e), or by a reduce_scatter when the consumer wants it split (%s). A
# table of 8 rows (%tiny) is cheaper to gather than the all_reduce of 64
# looked-up rows: it is gathered.
# RUN: %shardc %s --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=IR
# RUN: %shardc %s --mesh 2x2 --report json | FileCheck %s --check-prefix=JSON
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s --check-prefix=WHY
mesh dp, tp
input  ids  : i32[4, 16] shard(dp, _)
input  few  : i32[64]
param  wte  : f32[256, 32] shard(tp, _) = zeros
param  tiny : f32[8, 32] shard(tp, _) = zeros
e = embedding(wte, ids)
s = embedding(wte, ids) shard(dp, tp, _)
t = embedding(tiny, few)
output e, s, t
# IR:      %[[IDS:[0-9]+]] = check_ids %ids {bound = 256} : i32[2, 16] auto(dp, _)
# IR-NEXT: %e_rows = iota {shape = [256]} : i32[256] auto(_)
# IR-NEXT: %[[CLS:[0-9]+]] = slice %e_rows {dim = 0, axes = [tp]} : i32[128] auto(tp)
# IR-NEXT: %[[LAST:[0-9]+]] = amax %[[CLS]] {axis = 0, keepdims = false} : i32[] auto() partial(tp)
# IR-NEXT: %[[C127:[0-9]+]] = const {value = 127.0} : i32[] auto()
# IR-NEXT: %[[OFF:[0-9]+]] = sub %[[LAST]], %[[C127]] : i32[] auto() partial(tp)
# IR-NEXT: %[[REL:[0-9]+]] = sub %[[IDS]], %[[OFF]] : i32[2, 16] auto(dp, _) partial(tp)
# IR-NEXT: %[[M1:[0-9]+]] = const {value = -1.0} : i32[] auto()
# IR-NEXT: %[[GE:[0-9]+]] = gt %[[REL]], %[[M1]] : i32[2, 16] auto(dp, _) partial(tp)
# IR-NEXT: %[[C128:[0-9]+]] = const {value = 128.0} : i32[] auto()
# IR-NEXT: %[[LT:[0-9]+]] = gt %[[C128]], %[[REL]] : i32[2, 16] auto(dp, _) partial(tp)
# IR-NEXT: %[[IN:[0-9]+]] = mul %[[GE]], %[[LT]] : i32[2, 16] auto(dp, _) partial(tp)
# IR-NEXT: %[[ROW:[0-9]+]] = mul %[[REL]], %[[IN]] : i32[2, 16] auto(dp, _) partial(tp)
# IR-NEXT: %[[LOOK:[0-9]+]] = embedding %wte, %[[ROW]] : f32[2, 16, 32] auto(dp, _, _) partial(tp)
# IR-NEXT: %[[MF:[0-9]+]] = cast %[[IN]] {dtype = f32} : f32[2, 16] auto(dp, _) partial(tp)
# IR-NEXT: %[[MR:[0-9]+]] = reshape %[[MF]] {shape = [2, 16, 1]} : f32[2, 16, 1] auto(dp, _, _) partial(tp)
# IR-NEXT: %[[P:[0-9]+]] = mul %[[LOOK]], %[[MR]] : f32[2, 16, 32] auto(dp, _, _) partial(tp)
# IR-NEXT: %e = all_reduce %[[P]] {axes = [tp]} : f32[2, 16, 32] auto(dp, _, _)
# IR:      %s = reduce_scatter %{{[0-9]+}} {dim = 1, axes = [tp]} : f32[2, 8, 32] shard(dp, tp, _)
# IR-NEXT: %[[T:[0-9]+]] = all_gather %tiny {dim = 0, axes = [tp]} : f32[8, 32] shard(_, _)
# IR-NEXT: %t = embedding %[[T]], %few : f32[64, 32] auto(_, _)
# JSON: "bytes_sent": 6656, "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 1024, "phase": "forward"}, {"kind": "reduce_scatter", "axes": ["tp"], "dtype": "f32", "elements": 1024, "phase": "forward"}, {"kind": "all_gather", "axes": ["tp"], "dtype": "f32", "elements": 256, "phase": "forward"}]}]}
# WHY: # collectives and slices of the partitioned program (per rank)
# WHY-NEXT: slice over tp (line 19, 0 bytes per rank): %e_rows (_) -> (tp) for embedding (the vocabulary rows this rank holds)
# WHY-NEXT: all_reduce over tp (line 19, 4096 bytes per rank): %e (dp, _, _) partial(tp) -> (dp, _, _) for embedding (the result's sharding, by: forward from %wte and %ids through embedding; the table split along the vocabulary, rows looked up where they are: 4096 bytes per rank against 16384 for gathering it)
# WHY-NEXT: slice over tp (line 20, 0 bytes per rank): %s_rows (_) -> (tp) for embedding (the vocabulary rows this rank holds)
# WHY-NEXT: reduce_scatter over tp (line 20, 2048 bytes per rank): %s (dp, _, _) partial(tp) -> (dp, tp, _) for embedding (the result's sharding, by: annotation; the table split along the vocabulary, rows looked up where they are: 2048 bytes per rank against 16384 for gathering it)
# WHY-NEXT: all_gather over tp (line 21, 512 bytes per rank): %tiny (tp, _) -> (_, _) for embedding (the embedding table whole along the vocabulary; %tiny has its sharding by: annotation)
