"""Score your own videos and images with a detector: is this fake, according to it?

  fairforensics detect PATH ... --run RUN_DIR [--weights best|last|FILE] [--out DIR]
  fairforensics detect PATH ... --detector NAME --weights FILE [--variant paper] [--out DIR]
  fairforensics detect PATH ... --model PACKAGE_DIR|hf:OWNER/NAME[@REV] [--out DIR]
  fairforensics detect CROPS ... --crops --detector meso4 --weights Meso4_DF.h5

PATH: images, videos, folders (searched recursively) or .txt files listing paths. Faces are
cropped as the run's training data was (the settings its index records; for --model, those the
package records; for --detector, DeepfakeBench's defaults), so a video's score equals what
preprocess + test.py give it.
Prints one line per file; with --out also detections.csv, frames.csv, detections.json and
report.html. With a run or package that stored a calibration (the temperature scaling training
fits on validation), a column `calibrated` gives the calibrated P(fake) beside the score
(score_calibrated in the files); the verdict stays at the run's threshold on the raw score. Exit code 1 when any file failed (unreadable, unsupported), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from fairforensics.cli.errors import UserInputError, add_import_argument, configure_logging, run_cli
from fairforensics.cli.helptext import guide
from fairforensics.cli.preflight import check_media_inputs, check_source_files
from fairforensics.cli.source import add_detector_source, check_detector_source
from fairforensics.cli.thresholds import add_threshold_arguments
from fairforensics.configs.writable import check_writable


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("detect"),
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="image, video, folder or .txt list")
    add_detector_source(p)
    p.add_argument("--out", type=Path, help="write detections.csv/json, frames.csv, report.html")
    p.add_argument(
        "--crops",
        action="store_true",
        help="the inputs already are face crops: score them as they are (resized to the "
        "detector's input), no face detection",
    )
    p.add_argument(
        "--all-faces",
        action="store_true",
        help="score every face (grouped into tracks across frames), not only the largest",
    )
    p.add_argument("--explain", action="store_true", help="Grad-CAM overlays in the report")
    add_threshold_arguments(p)
    p.add_argument("--device", default="auto", help="auto (cuda when available), cpu, cuda[:N]")
    p.add_argument("--batch-size", type=int, default=32, help="faces per model batch")
    p.add_argument("--no-amp", action="store_true", help="no autocast on CUDA (fp32)")
    p.add_argument(
        "--files-per-batch",
        type=int,
        default=16,
        help="files cropped before their faces are scored",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a face-crop setting (e.g. sampling.num_frames=8, face.detector=mtcnn); "
        "scores then differ from test.py's",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show libav's (FFmpeg's) own lines about videos it cannot read",
    )
    add_import_argument(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    check_detector_source(args)
    if args.out is not None:
        check_writable(args.out)  # before any file is scored
    check_source_files(args)  # then the model's files and the inputs, before torch loads
    check_media_inputs(args.paths)
    from fairforensics.configs import import_modules
    from fairforensics.preprocessing.video_problems import libav_messages

    libav_messages(args.verbose)  # before the first video opens

    import_modules(args.imports)
    configure_logging(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.detector:
        from fairforensics.detectors import list_detectors

        if args.detector not in list_detectors():
            raise UserInputError(
                f"--detector {args.detector!r} is not a registered detector; choose one of "
                f"{', '.join(list_detectors())} (or --import the module that registers it)"
            )
    from fairforensics.evaluation.detection import detect, exit_code, terminal_table, write_outputs

    result = detect(
        args.paths,
        run=args.run,
        detector=args.detector,
        model=args.model,
        weights=args.weights,
        model_config=args.model_config,
        variant=args.variant,
        device=args.device,
        batch_size=args.batch_size,
        amp=not args.no_amp,
        crops=args.crops,
        all_faces=args.all_faces,
        explain=args.explain,
        threshold=args.threshold,
        threshold_from=args.threshold_from,
        face_overrides=args.overrides,
        files_per_batch=args.files_per_batch,
        progress=True,
    )
    print(terminal_table(result))
    print(f"face crops: {result.face_settings_source}")
    if args.out:
        paths = write_outputs(result, args.out)
        print(f"report: {paths['report.html'].resolve()}")
    return exit_code(result)


if __name__ == "__main__":
    run_cli(main)
