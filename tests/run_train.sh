#!/usr/bin/env bash
# run_train.sh MODEL MESH COMM DATA STEPS [ZERO_K]: the semantic test of
# training one model on one mesh (DESIGN.md §7). Compiles MODEL (it has a
# `train` line) for MESH and for the unsharded mesh (every axis of size 1),
# runs STEPS training steps of each on the same batch, the sharded one over
# COMM (local: threads; mpi: mpirun, one process per rank), from the params
# and inputs in DATA (made by tests/oracle/oracle.py --train STEPS), and
# compares
#   1. the loss of every step with the unsharded run's and with PyTorch's
#      (the "loss" of DATA/train.safetensors);
#   2. the params and optimizer states after the last step with the
#      unsharded run's, and the params with PyTorch's (DATA/train.safetensors).
# With ZERO_K, the sharded run uses a copy of MODEL whose `train` line ends
# in `zero ZERO_K over dp` (the unsharded run, the reference, does not).
# With SCHEDULE set in the environment (gpipe, 1f1b, interleaved(V)), the
# sharded run uses a copy of MODEL whose `pipeline` line has that schedule;
# with REFERENCE (and REFERENCE_MESH, its mesh of ones) set, the unsharded
# run is of that model instead of MODEL (a pipelined model against the same
# model without its pipeline); REFERENCE=unpipelined makes that model from
# MODEL: its `repeat ... over AXIS` without `over AXIS`, no `pipeline` line
# (on MESH's mesh of ones). DEFINES (for example "-DL=8") is passed to
# both compilations, and must match the constants DATA was made with.
# MICROBATCHES=N: the sharded run's `pipeline` line has N microbatches.
# EXACT=1: the sharded run is compared with the unsharded one with no
# tolerance (the comparisons with PyTorch keep theirs). AGAINST_LOCAL=1
# (COMM mpi): the sharded plan runs under --comm local too, and the MPI
# run's losses, params and states must equal its to the bit.
# A mismatch prints the step (losses) or the tensor (st_compare), both
# values and the error. Tools come from the environment: SHARDC, SHARDRUN,
# ST_COMPARE, MPIRUN (with MPIRUN_FLAGS); perl (with its core JSON::PP)
# splits safetensors files.
#
# Tolerances, |got - want| <= atol + rtol |want|, per optimizer: about 10x
# the worst error measured over all of tests/CMakeLists.txt's train/* (5
# steps; meshes 2x2, 4x1, 1x2, local and mpi, ZeRO 1-3 on 4x1). Params
# and states: atol is 10x the worst absolute error and rtol a nominal 1e-5,
# since the worst relative errors are those of elements near 0.
#   sgd, mlp.sh (lr 0.01; the loss falls 1.4263 -> 1.4141, 3e-3 a step; the
#   params move by 4e-6 on average, 9e-5 at most):
#     losses: measured rel 0 (unsharded), 3.2e-7 (PyTorch; shardrun prints 6
#       decimals, a quantum of 7e-7 rel): rtol 5e-6
#     params: measured abs 1.5e-8 (unsharded: f32 sums in another order),
#       6e-8 (PyTorch: 2 ulps of b1): atol 1.5e-7 and 6e-7
#   adamw, transformer.sh (lr 3e-4; the loss falls 13.84 -> 8.59; the params
#   move by about 1e-3):
#     losses: measured rel 0 (unsharded), 9.3e-8 (PyTorch; the print quantum
#       is 1.2e-7 rel): rtol 1e-6
#     params: measured abs 5.3e-5 (unsharded; 3.8e-6 when tp = 1), 7.9e-5
#       (PyTorch; layers.*.mlp.w2): atol 5e-4 and 8e-4. AdamW's first steps
#       move each weight by about lr * sign(g) whatever the size of g, so a
#       weight whose gradient is near 0 (where f32 rounding decides its sign)
#       may differ by up to 2 lr = 6e-4 a step: the measured errors show a
#       little of that, far from the bound 2 lr STEPS = 3e-3. These atols
#       miss a missing weight decay (it moves the params by 6e-4 at most
#       here); the losses (9e-5 rel) and the moments (3x their atols) see it
#       (tried: the model with wd = 0 against this oracle).
#     m (|m| 5e-5 .. 1e-2): measured abs 9.1e-8 (unsharded), 2.4e-7
#       (PyTorch): atol 1e-6 and 2.5e-6
#     v (|v| 1e-8 .. 3e-4): measured abs 2.4e-9 (unsharded), 9.4e-9
#       (PyTorch): atol 3e-8 and 1e-7
#     opt.step (against the unsharded run; the oracle does not write it):
#       measured 0, m's atol
#   bf16 params through f32 masters, tests/models/mlp_bf16.sh (adamw, lr
#   1e-3, eps 1e-3: each master moves by about 5e-3 in 5 steps) and
#   mlp_bf16_momentum.sh (sgd, lr 0.05, momentum 0.9: by 5e-3 on average,
#   4e-2 at most), on meshes 1x1, 2x2 and 4x1 with ZeRO 1-3. The forward
#   and backward round every op to bf16 (8 significant bits), and a
#   sharded contraction sums bf16 partial results, so the unsharded run
#   and PyTorch (also bf16 per op) differ from the sharded one by bf16
#   rounding noise, as PyTorch's own bf16 loss differs from float64's on
#   these params (3.3e-4 rel):
#     losses: measured rel 4.2e-4 (unsharded), 4.0e-4 (PyTorch): rtol 2e-3
#     masters (f32): adamw measured abs 1.6e-4 (unsharded), 3.6e-4
#       (PyTorch): atol 5e-4 and 1e-3; momentum 1.0e-4 and 1.5e-4: atol
#       3e-4 and 5e-4. AdamW's masters sit closer to their moves than
#       the f32 models' do, as near-zero bf16 gradients flip sign; a
#       missing weight decay (3.5e-4 at most here) hides under them.
#     params (bf16): the master's noise, plus one bf16 ulp where it
#       straddles a rounding boundary (measured 1.95e-3 = 1 ulp at 0.3):
#       rtol 7.9e-3 (2^-7, an ulp relative to the value) and the master's
#       atol
#     m, v: measured abs 6.2e-5, 9.2e-5 (m; |m| up to 1e-2) and 3.1e-6
#       (v): atol 3e-4 and 1e-5; momentum buffer measured 6.6e-4
#       (unsharded), 8.4e-4 (PyTorch; up to 0.2): atol 3e-3
#   bf16 layers in a pipeline, tests/models/mlp_bf16_pp.sh (mlp_bf16.sh's
#   adamw on 4 residual layers over pp, 4 microbatches; the loss falls
#   5.78 -> 3.29 and each master moves by 4.7e-3), on 1x2x1, 2x2x1,
#   2x2x2 and 1x4x1 with 1f1b, gpipe and interleaved(2), and 2x2x1 with
#   ZeRO 1-3 (the suite runs some of these), against the unpipelined model
#   (REFERENCE=unpipelined) and PyTorch. The gradients of the 4 microbatches are summed in bf16, so
#   the pipelined run's noise is bf16's on gradients 4 layers deep (the
#   unpipelined run and PyTorch differ as much: masters 1.4e-3), which
#   AdamW turns into moves of lr whatever the gradient's size:
#     losses: measured rel 1.8e-3 (unpipelined), 2.2e-3 (PyTorch): rtol 5e-3
#     masters: measured abs 2.0e-3 and 2.5e-3: atol 4e-3 and 5e-3
#     params: as for mlp_bf16.sh, with these atols
#     m (|m| up to 0.16), v (up to 0.04): measured abs 8.8e-4 and 3.8e-4:
#       atol 2e-3 and 1e-3
#   These catch a master made from elsewhere (the seed's are 0.02 in size,
#   the params 0.2) or a step not taken, not noise-sized errors: those are
#   the EXACT tests' (one microbatch, no dp or tp: the unpipelined run's
#   arithmetic, so every loss, param and state is equal to the bit).
#   f16 params through f32 masters, tests/models/mlp_f16.sh (mlp_bf16.sh's
#   adamw, its data rounded to f16), on the same meshes. f16 keeps 11
#   significant bits to bf16's 8, so the sharded run's rounding noise is
#   about 2^-3 of bf16's; the unsharded run and PyTorch (each op in f32,
#   rounded to f16: the same arithmetic) agree to the f16 bit on the params
#   and to f32 rounding (3e-8) on the masters, so both references get one
#   tolerance:
#     losses: measured rel 1.9e-5: rtol 2.5e-4 (bf16's 2e-3 times 2^-3)
#     masters (f32): measured abs 2.2e-5: atol 2e-4 (tried: the model
#       with wd = 0 is off by 3.6e-4 here, and its losses by 4.6e-4 rel)
#     params (f16): measured 2.4e-4 = 1 ulp at 0.3: rtol 9.8e-4 (2^-10, an
#       ulp relative to the value) and the master's atol
#     m, v: measured abs 6.8e-6 and 3.7e-7: atol 7e-5 and 4e-6
# The loss tolerances assume shardrun prints at least 6 decimals.
set -euo pipefail

if [ $# -lt 5 ]; then
    echo "usage: run_train.sh MODEL MESH COMM DATA STEPS [ZERO_K]" >&2
    exit 2
fi
model=$1 mesh=$2 comm=$3 data=$4 steps=$5 zero=${6:-}
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT

if ! grep -q '^train ' "$model"; then
    echo "run_train.sh: $model has no train line" >&2
    exit 2
fi
rtol=1e-5 param_rtol=1e-5 master_ref_atol=0 master_torch_atol=0
if grep -q '^ *param .*: *f16\[' "$model"; then
    # f16 params with f32 masters (tests/models/mlp_f16.sh): see above
    loss_rtol=2.5e-4 param_rtol=9.8e-4
    master_ref_atol=2e-4 master_torch_atol=2e-4 m_ref_atol=7e-5 m_torch_atol=7e-5
    v_ref_atol=4e-6 v_torch_atol=4e-6
    param_ref_atol=$master_ref_atol param_torch_atol=$master_torch_atol
elif grep -q '^ *param .*: *bf16\[' "$model"; then
    # bf16 params with f32 masters (tests/models/mlp_bf16*.sh): see above
    loss_rtol=2e-3 param_rtol=7.9e-3
    if grep -q '^repeat .* over ' "$model"; then
        # pipelined (tests/models/mlp_bf16_pp.sh): see above
        loss_rtol=5e-3 master_ref_atol=4e-3 master_torch_atol=5e-3 m_ref_atol=2e-3
        m_torch_atol=2e-3 v_ref_atol=1e-3 v_torch_atol=1e-3
    elif grep -q '^train .* adamw(' "$model"; then
        master_ref_atol=5e-4 master_torch_atol=1e-3 m_ref_atol=3e-4 m_torch_atol=3e-4
        v_ref_atol=1e-5 v_torch_atol=1e-5
    else
        master_ref_atol=3e-4 master_torch_atol=5e-4 m_ref_atol=3e-3 m_torch_atol=3e-3
        v_ref_atol=0 v_torch_atol=0
    fi
    param_ref_atol=$master_ref_atol param_torch_atol=$master_torch_atol
elif grep -q '^train .* adamw(' "$model"; then
    loss_rtol=1e-6 param_ref_atol=5e-4 param_torch_atol=8e-4
    m_ref_atol=1e-6 v_ref_atol=3e-8 m_torch_atol=2.5e-6 v_torch_atol=1e-7
elif grep -q '^train .* sgd(' "$model"; then
    loss_rtol=5e-6 param_ref_atol=1.5e-7 param_torch_atol=6e-7
    m_ref_atol=0 v_ref_atol=0 m_torch_atol=0 v_torch_atol=0      # no states
else
    echo "run_train.sh: $model: no tolerances measured for its optimizer" >&2
    exit 2
fi

# the unsharded mesh: as many axes as MESH, each of size 1
ones=$(echo "$mesh" | sed 's/[0-9][0-9]*/1/g')
ranks=$(( $(echo "$mesh" | sed 's/x/*/g') ))
run_args=(--steps "$steps" --params "$data/params.safetensors"
          --inputs "$data/inputs.safetensors")

sharded=$model
if [ -n "${SCHEDULE:-}" ]; then
    sharded=$tmp/sched-$(basename "$model")
    sed "s/^\(pipeline .*\)schedule .*\$/\1schedule $SCHEDULE/" "$model" > "$sharded"
    grep "^pipeline " "$sharded"
fi
if [ -n "${MICROBATCHES:-}" ]; then
    sed "s/^pipeline microbatches [0-9]*/pipeline microbatches $MICROBATCHES/" "$sharded" \
        > "$tmp/mb-$(basename "$model")"
    sharded=$tmp/mb-$(basename "$model")
    grep "^pipeline " "$sharded"
fi
if [ -n "$zero" ]; then
    sed "s/^\(train .*\)\$/\1 zero $zero over dp/" "$sharded" > "$tmp/zero.sh"
    sharded=$tmp/zero.sh
    grep "^train " "$sharded"
fi

# losses LOG OUT: the number after "loss" on each step line of LOG, one a line
losses() {
    awk '$1 == "step" { for (i = 2; i < NF; i++) if ($i == "loss") print $(i + 1) }' "$1" > "$2"
}

# count_losses FROM FILE: FILE has STEPS lines
count_losses() {
    if [ "$(wc -l < "$2")" -ne "$steps" ]; then
        echo "run_train.sh: $1: $(wc -l < "$2") losses, expected $steps" >&2
        return 1
    fi
}

# st_perl: perl on safetensors files (the oracle's and shardrun's)
#   values IN NAME                 prints the elements of NAME, one a line
#   split IN PATTERN OUT ... REST  writes each tensor of IN to the OUT of the
#                                  first PATTERN (a perl regex) its name
#                                  matches, else to REST; no file for none
st_perl() {
    perl -MJSON::PP -e '
        my ($mode, $in, @outs) = @ARGV;
        open(my $f, "<:raw", $in) or die "$in: $!\n";
        local $/;
        my $all = <$f>;
        my $n = unpack("Q<", substr($all, 0, 8));
        my $hdr = decode_json(substr($all, 8, $n));
        delete $hdr->{__metadata__};
        my $blob = substr($all, 8 + $n);
        sub bytes { my ($s, $e) = @{$_[0]->{data_offsets}}; substr($blob, $s, $e - $s) }
        if ($mode eq "values") {
            my $t = $hdr->{$outs[0]} or die "$in: no tensor \"$outs[0]\"\n";
            $t->{dtype} eq "F32" or die "$in: \"$outs[0]\" is not F32\n";
            printf "%.9g\n", $_ for unpack("f<*", bytes($t));
            exit 0;
        }
        my $rest = pop @outs;
        my %files;
        for my $name (sort keys %$hdr) {
            my $out = $rest;
            for (my $i = 0; $i < @outs; $i += 2) {
                if ($name =~ $outs[$i]) { $out = $outs[$i + 1]; last }
            }
            my $t = $hdr->{$name};
            my $file = $files{$out} //= {hdr => {}, data => ""};
            my $data = bytes($t);
            $file->{hdr}{$name} = {dtype => $t->{dtype}, shape => $t->{shape},
                data_offsets => [length($file->{data}), length($file->{data}) + length($data)]};
            $file->{data} .= $data;
        }
        for my $out (keys %files) {
            my $text = JSON::PP->new->canonical->encode($files{$out}{hdr});
            $text .= " " x (-length($text) % 8);
            open(my $o, ">:raw", $out) or die "$out: $!\n";
            print $o pack("Q<", length($text)), $text, $files{$out}{data};
            close($o) or die "$out: $!\n";
        }
    ' "$@"
}

# compare_losses WANT GOT RTOL: per step, |got - want| <= RTOL |want|
compare_losses() {
    paste "$1" "$2" | awk -v rtol="$3" '
        function abs(v) { return v < 0 ? -v : v }
        {
            num = $2 ~ /^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/
            d = abs($2 - $1)
            r = d / (abs($1) > 1e-30 ? abs($1) : 1e-30)
            if (num && d > maxa) maxa = d
            if (num && r > maxr) maxr = r
            if (!num || d > rtol * abs($1)) {
                printf "  step %d: expected %.9g, got %s: abs err %.3g, rel err %.3g\n", \
                    NR, $1, $2, d, r
                bad++
            }
        }
        END {
            printf "loss [%d steps]: max abs err %.3g, max rel err %.3g (rtol %g): %s\n", \
                NR, maxa, maxr, rtol, bad ? "MISMATCH" : "ok"
            exit bad ? 1 : 0
        }'
}

reference=${REFERENCE:-$model}
if [ "$reference" = unpipelined ]; then
    reference=$tmp/unpipelined-$(basename "$model")
    sed -e 's/^\(repeat .*\) over [A-Za-z_][A-Za-z0-9_]* *{/\1 {/' -e '/^pipeline /d' \
        "$model" > "$reference"
    if cmp -s "$model" "$reference"; then
        echo "run_train.sh: $model has no pipeline to remove" >&2
        exit 2
    fi
fi
read -r -a defines <<< "${DEFINES:-}"
"$SHARDC" "$reference" "${defines[@]}" --mesh "${REFERENCE_MESH:-$ones}" \
    -o "$tmp/ref.plan"
"$SHARDRUN" "$tmp/ref.plan" --comm local "${run_args[@]}" \
    --save-params "$tmp/ref.safetensors" | tee "$tmp/ref.log"

"$SHARDC" "$sharded" "${defines[@]}" --mesh "$mesh" -o "$tmp/model.plan"
if [ "$comm" = mpi ]; then
    # shellcheck disable=SC2086
    "$MPIRUN" $MPIRUN_FLAGS -np "$ranks" "$SHARDRUN" "$tmp/model.plan" --comm mpi \
        "${run_args[@]}" --save-params "$tmp/got.safetensors" | tee "$tmp/got.log"
else
    "$SHARDRUN" "$tmp/model.plan" --comm local --ranks "$ranks" "${run_args[@]}" \
        --save-params "$tmp/got.safetensors" | tee "$tmp/got.log"
fi

losses "$tmp/ref.log" "$tmp/ref.loss"
losses "$tmp/got.log" "$tmp/got.loss"
st_perl values "$data/train.safetensors" loss > "$tmp/torch.loss"
count_losses "the unsharded run" "$tmp/ref.loss"
count_losses "the sharded run" "$tmp/got.loss"
count_losses "$data/train.safetensors" "$tmp/torch.loss"
# the params and states of RUN into $tmp/RUN-m.safetensors (AdamW's m), -v,
# -opt (other states), -params and -loss (PyTorch's losses, not used)
for run in ref torch; do
    file=$tmp/$run.safetensors
    [ $run = ref ] || file=$data/train.safetensors
    st_perl split "$file" '^loss$' "$tmp/$run-loss.safetensors" \
        '^opt\..*\.m$' "$tmp/$run-m.safetensors" '^opt\..*\.v$' "$tmp/$run-v.safetensors" \
        '^opt\..*\.master$' "$tmp/$run-master.safetensors" \
        '^opt\.' "$tmp/$run-opt.safetensors" "$tmp/$run-params.safetensors"
done

# compare WHAT EXPECTED ATOL RTOL: st_compare EXPECTED against the sharded
# run's params and states, when EXPECTED has tensors
compare() {
    if [ -e "$2" ]; then
        echo "== $what: $1"
        "$ST_COMPARE" "$2" "$tmp/got.safetensors" --rtol "$4" --atol "$3"
    fi
}

# compare_run RUN AGAINST PARAM_ATOL M_ATOL V_ATOL MASTER_ATOL RTOL PARAM_RTOL:
# the params and states of RUN (ref or torch) against the sharded run's
compare_run() {
    local bad=0
    compare "params $2" "$tmp/$1-params.safetensors" "$3" "$8" || bad=1
    compare "AdamW m $2" "$tmp/$1-m.safetensors" "$4" "$7" || bad=1
    compare "AdamW v $2" "$tmp/$1-v.safetensors" "$5" "$7" || bad=1
    compare "f32 masters $2" "$tmp/$1-master.safetensors" "$6" "$7" || bad=1
    compare "other states $2" "$tmp/$1-opt.safetensors" "$4" "$7" || bad=1
    return $bad
}

# With EXACT set, the sharded run must do the unsharded run's arithmetic
# (a pipeline of one microbatch without dp or tp): equal to the bit
ref_loss_rtol=$loss_rtol ref_rtol=$rtol ref_param_rtol=$param_rtol
if [ -n "${EXACT:-}" ]; then
    ref_loss_rtol=0 ref_rtol=0 ref_param_rtol=0
    param_ref_atol=0 m_ref_atol=0 v_ref_atol=0 master_ref_atol=0
fi

what="$(basename "$sharded") --mesh $mesh ($comm)${zero:+ zero $zero}"
rc=0
if [ -n "${AGAINST_LOCAL:-}" ]; then
    echo "== $what: losses, params and states against --comm local, to the bit"
    if [ "$comm" != mpi ]; then
        echo "run_train.sh: AGAINST_LOCAL is for COMM mpi" >&2
        exit 2
    fi
    "$SHARDRUN" "$tmp/model.plan" --comm local --ranks "$ranks" "${run_args[@]}" \
        --save-params "$tmp/local.safetensors" > "$tmp/local.log"
    losses "$tmp/local.log" "$tmp/local.loss"
    if ! cmp "$tmp/local.loss" "$tmp/got.loss"; then
        paste "$tmp/local.loss" "$tmp/got.loss"
        rc=1
    fi
    "$ST_COMPARE" "$tmp/local.safetensors" "$tmp/got.safetensors" --rtol 0 --atol 0 || rc=1
fi
echo "== $what: losses against the unsharded run"
compare_losses "$tmp/ref.loss" "$tmp/got.loss" "$ref_loss_rtol" || rc=1
echo "== $what: losses against PyTorch"
compare_losses "$tmp/torch.loss" "$tmp/got.loss" "$loss_rtol" || rc=1
compare_run ref "against the unsharded run" "$param_ref_atol" "$m_ref_atol" "$v_ref_atol" \
    "$master_ref_atol" "$ref_rtol" "$ref_param_rtol" || rc=1
compare_run torch "against PyTorch" "$param_torch_atol" "$m_torch_atol" "$v_torch_atol" \
    "$master_torch_atol" "$rtol" "$param_rtol" || rc=1
exit $rc
