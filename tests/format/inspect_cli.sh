#!/usr/bin/env bash
# deepum-inspect on hostile inputs and outputs, one case per ctest test:
#   inspect_cli.sh CASE DEEPUM_INSPECT WORK_DIR SOURCE_DIR
# Every case is bounded (timeouts, finite inputs): none can hang CI. No case
# writes to /dev/null or another device of the machine: run as root against a
# writer that renames, it would replace it. FIFOs take the same path.
set -u
case_name=$1 inspect=$2 work=$3 src=$4
shipped=$src/tests/data/resnet50-b32.profile.pb.gz
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2

fail() { echo "FAIL: $*"; exit 1; }
# Runs deepum-inspect; the error must be exactly one line starting with the
# banner and the name, and the exit code 1.
expect_one_line_error() {
  local name=$1; shift
  timeout 60 "$inspect" "$@" > out 2> err
  local rc=$?
  cat err
  [ $rc -eq 1 ] || fail "exit code $rc, not 1"
  [ "$(wc -l < err)" -eq 1 ] || fail "stderr is not one line"
  grep -qF "deepum-inspect: $name: " err || fail "the error does not name $name"
}

case $case_name in
dev_zero)
  # An endless device stops at the stream cap, in bounded memory.
  expect_one_line_error /dev/zero /dev/zero
  grep -qF "more than 1 GiB from a pipe or device; refusing to read it" err || fail "no cap error"
  ;;
stdin_pipe)
  # A pipe is read in chunks: a shipped profile through a pipe reads as from the file.
  timeout 60 cat "$shipped" | timeout 60 "$inspect" - > out || fail "stdin pipe"
  grep -q "profile of resnet50" out || fail "no summary"
  head -c 100000 /dev/urandom | expect_one_line_error - -
  ;;
gzip_trailing_garbage)
  { cat "$shipped"; printf 'trailing garbage'; } > t.profile.pb.gz
  expect_one_line_error t.profile.pb.gz t.profile.pb.gz
  grep -qF "16 bytes of trailing garbage after the gzip data" err || fail "garbage accepted"
  ;;
text_parse_error)
  # libprotobuf's own log lines must not reach stderr beside ours.
  printf 'format_version: 1\nkernels { nam: "x" }\n' > a.profile.txtpb
  expect_one_line_error a.profile.txtpb a.profile.txtpb
  grep -qF 'line 2' err || fail "no parser detail"
  ;;
escaped_name)
  name=$(printf 'x\033[31m\nname.profile.pb')
  printf garbage > "$name"
  expect_one_line_error 'x\x1b[31m\nname.profile.pb' "$name"
  ;;
convert_onto_input)
  cp "$shipped" in.profile.pb.gz && ln -s in.profile.pb.gz link.profile.pb.gz
  expect_one_line_error in.profile.pb.gz in.profile.pb.gz --convert in.profile.pb.gz
  grep -qF "is the input file in.profile.pb.gz; refusing to overwrite it" err || fail "no refusal"
  expect_one_line_error ./link.profile.pb.gz in.profile.pb.gz --perfetto ./link.profile.pb.gz
  cmp -s in.profile.pb.gz "$shipped" || fail "the input was overwritten"
  [ -L link.profile.pb.gz ] || fail "the link was replaced"
  ;;
fifo_output)
  mkfifo trace.fifo || exit 2
  timeout 30 cat trace.fifo > got.json &
  reader=$!
  timeout 30 "$inspect" "$shipped" --perfetto trace.fifo > out || fail "exit $?"
  wait $reader || fail "the reader got nothing (the FIFO was replaced?)"
  [ -p trace.fifo ] || fail "the FIFO was replaced"
  grep -q traceEvents got.json || fail "no trace came through the FIFO"
  ;;
symlink_output)
  mkdir real && printf old > real/t.pb && ln -s real/t.pb link.pb
  timeout 60 "$inspect" "$shipped" --convert link.pb > out || fail "exit $?"
  [ -L link.pb ] || fail "the link was replaced"
  timeout 60 "$inspect" real/t.pb > out || fail "the target is not the converted profile"
  ;;
*)
  echo "unknown case $case_name"; exit 2 ;;
esac
echo PASS
