// Build step: writes the program that `hfstatic run` uses when no -m is given.
// usage: make_default_program OUT.hfs [HF_CHECKPOINT_DIR]
// Without a checkpoint folder it exports a random-initialised `tiny` checkpoint.
#include <cstdio>
#include <filesystem>
#include <string>

#include "export/exporter.h"
#include "export/make_checkpoint.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s OUT.hfs [HF_CHECKPOINT_DIR]\n", argv[0]);
    return 2;
  }
  const std::string out = argv[1];
  try {
    std::string checkpoint = argc == 3 ? argv[2] : out + ".checkpoint";
    if (argc == 2) {
      hfstatic::MakeCheckpointOptions m;
      m.preset = "tiny";
      m.seed = 0;
      hfstatic::make_checkpoint(checkpoint, m);
    }
    hfstatic::ExportOptions o;
    o.graph.prefill_len = 32;
    o.graph.max_context = 512;
    o.graph.repeat_state = true;
    hfstatic::export_program(checkpoint, out, o);
    if (argc == 2) std::filesystem::remove_all(checkpoint);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_default_program: %s\n", e.what());
    return 1;
  }
  return 0;
}
