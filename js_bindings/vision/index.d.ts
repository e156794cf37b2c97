// Types of wasmrt/vision: the AR face pipeline (FaceMesh) and the lipstick try-on (paintLips).
// Coordinates are image pixels: x right, y down, (0, 0) the top-left corner of the top-left pixel.

/** ImageData, or any RGBA (or RGB with channels: 3) pixel buffer. */
export interface Pixels {
  data: Uint8Array | Uint8ClampedArray | ArrayLike<number>;
  width: number;
  height: number;
  channels?: 3 | 4;
}

/** Anything with async run(feeds) -> {outputName: {data}}: a wasmrt Model or a Worker model. */
export interface RunnableModel {
  run(feeds: Record<string, { data: Float32Array; shape: number[] }>): Promise<Record<string, { data: ArrayLike<number> | ArrayLike<bigint> }>>;
  release?(): void | Promise<void>;
}
export interface ModelLoader { load(source: string | URL | Uint8Array | ArrayBuffer, options?: { name?: string }): Promise<RunnableModel> }

/** Rotated square crop: centre, side (pixels), angle of the eye line (radians, y down). */
export interface Roi { cx: number; cy: number; side: number; angle: number }

export interface Detection {
  /** [xMin, yMin, xMax, yMax] */
  box: number[];
  /** 6 (x, y) pairs: right eye, left eye, nose tip, mouth centre, right ear, left ear (the subject's) */
  keypoints: ArrayLike<number>;
  score: number;
}

export interface Face {
  box: { xMin: number; yMin: number; xMax: number; yMax: number; width: number; height: number };
  /** The detector's 6 keypoints, derived from the landmarks: [[x, y], ...] */
  keypoints: [number, number][];
  /** Face presence from the landmark model, in [0, 1]. */
  score: number;
  /** 468 points: x, y in image pixels, z (same scale, relative depth). */
  landmarks: Float32Array;
  roi: Roi;
  /** The detector's output when it ran for this face on this frame (null when tracked). */
  detection: Detection | null;
}

/** Milliseconds per stage of one frame. */
export interface StageMs {
  detectorPre?: number; detector?: number; detectorPost?: number;
  warp?: number; landmarks?: number; landmarksPost?: number; total: number;
}

export interface FaceMeshOptions {
  /** Folder (URL or path) with face_detector.wrt and face_landmark.wrt; default: defaultModelBase(), the npm
   * package's own models/ folder. */
  modelBase?: string | URL;
  detectorModel?: string | URL | Uint8Array | ArrayBuffer;
  landmarkModel?: string | URL | Uint8Array | ArrayBuffer;
  maxFaces?: number;
  minDetectionScore?: number;
  minPresence?: number;
  /** Follow faces from the previous frame's landmarks; the detector runs only when tracking is lost. */
  tracking?: boolean;
  /** Use the attention mesh (face_landmark_attention.wrt): 478 landmarks with refined lips, eyes and irises. */
  refine?: boolean;
  /** Where the crops, mask resize, smoothing and compositing run: "engine" (default: the wasm engine the models are
   * loaded in, JS where it cannot be reached from here, e.g. models of initWorker()) or "js". Same bytes either way. */
  imageOps?: "engine" | "js";
}

export class FaceMesh {
  static create(rt: ModelLoader, options?: FaceMeshOptions): Promise<FaceMesh>;
  constructor(detector: RunnableModel, landmarker: RunnableModel, options?: FaceMeshOptions);
  tracked: Roi[];
  detect(image: Pixels): Promise<{ faces: Face[]; ranDetector: boolean; ms: StageMs }>;
  detectFaces(image: Pixels, ms?: StageMs): Promise<Detection[]>;
  landmarksIn(image: Pixels, roi: Roi, ms?: StageMs): Promise<{ landmarks: Float64Array; presence: number }>;
  reset(): void;
  release(): Promise<void>;
}
/** The package's models/ folder, where FaceMesh.create finds the face models unless told otherwise. */
export function defaultModelBase(): URL;
/** The attention mesh's refinement: the mesh points each region stands for, and refine() merging them. */
export const LIPS: number[];
export const LEFT_EYE: number[];
export const RIGHT_EYE: number[];
export function refineLandmarks(mesh: ArrayLike<number>, lips: ArrayLike<number>, leftEye: ArrayLike<number>,
  rightEye: ArrayLike<number>, leftIris: ArrayLike<number>, rightIris: ArrayLike<number>): Float64Array;
/** A rotated rectangle sampled as MediaPipe's ImageToTensor does (8-bit bilinear, 1/32 pixel). */
export function sampleRect(pixels: Pixels, cx: number, cy: number, w: number, h: number, angle: number, nW: number,
  nH: number, border?: "replicate" | "zero", out?: Uint8Array): Uint8Array;

export interface PaintOptions {
  /** "#rrggbb", "#rgb" or [r, g, b] */
  color?: string | [number, number, number];
  /** 0..1 (default 0.6) */
  intensity?: number;
}
/** A region of the image with one value per pixel. */
export interface Region<T> { x0: number; y0: number; w: number; h: number; data: T }
type LandmarkSource = Face | ArrayLike<number>;

/** Recolour the lips on a 2D canvas that shows the image at natural size. Returns the feathered alpha used. */
export function paintLips(ctx: CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D, face: Face | null | undefined,
  options?: PaintOptions): Region<Float64Array> | null;
/** The same on RGBA pixels (ImageData or a Node buffer), in place. */
export function recolorLips<P extends Pixels>(pixels: P, face: LandmarkSource, options?: PaintOptions): P;
export function recolor<P extends Pixels>(pixels: P, alpha: Region<Float64Array>, color: PaintOptions["color"],
  intensity: number, ox?: number, oy?: number): P;
/** 0/1 lips (outer ring minus inner ring; pixel centres, even-odd rule). */
export function lipMask(face: LandmarkSource, width: number, height: number,
  region?: { x0: number; y0: number; w: number; h: number }): Region<Uint8Array>;
export function lipAlpha(face: LandmarkSource, width: number, height: number): Region<Float64Array>;
export function lipRegion(landmarks: ArrayLike<number>, width: number, height: number, grow?: number):
  { x0: number; y0: number; w: number; h: number };
export function featherRadius(landmarks: ArrayLike<number>): number;
export function parseColor(color: string | number[]): [number, number, number];
export const LIPS_OUTER: number[];
export const LIPS_INNER: number[];

export const DETECTOR_INPUT: 128;
export const LANDMARK_INPUT: 192;
export function ssdAnchors(): Float64Array;
export function letterbox(pixels: Pixels): { data: Float32Array; shape: number[]; geometry: Record<string, number> };
export function decode(regressors: ArrayLike<number>, logits: ArrayLike<number>, geometry: Record<string, number>,
  minScore?: number): Detection[];
export function iou(a: number[], b: number[]): number;
export function weightedNms(dets: Detection[], iouThreshold?: number): Detection[];
export function roiFromDetection(det: Detection): Roi;
export function roiFromLandmarks(landmarks: ArrayLike<number>): Roi;
export function roiIsSane(roi: Roi, previous: Roi | null | undefined, width: number, height: number): boolean;
export function warpRoi(pixels: Pixels, roi: Roi, n?: number, out?: Float32Array): Float32Array;
export function mapLandmarks(raw: ArrayLike<number>, roi: Roi, n?: number): Float64Array;

/** Frame t of n of the deterministic test clip (python_ref/vision/clip.py). */
export function clipFrame(image: Pixels, t: number, n: number, size?: number): { data: Uint8ClampedArray; width: number; height: number };
export function clipParams(t: number, n: number): { angle: number; scale: number; sx: number; sy: number };

// -- hands (palm detection, 21 landmarks, handedness, tracking, gestures) ------------------------------------------

export * from "./constants.js";

/** A palm from the palm detector: box, 7 keypoints (wrist, index/middle/ring/pinky MCP, thumb CMC, thumb MCP). */
export interface PalmDetection {
  /** [xMin, yMin, xMax, yMax] */
  box: number[];
  /** 7 (x, y) pairs, flat */
  keypoints: Float64Array;
  score: number;
}

export type GestureName = "open_palm" | "closed_fist" | "pointing_up" | "victory" | "thumb_up" | "thumb_down";

export interface Hand {
  /** 21 points (constants HAND_LANDMARK_NAMES): x, y image pixels, z (relative depth, in the scale of x). */
  landmarks: Float64Array;
  /** 21 points in metres about the hand's centre (x right, y down, as the image). */
  worldLandmarks: Float64Array;
  /** "Left" or "Right" as MediaPipe labels them (for a mirrored, selfie-camera image). */
  handedness: "Left" | "Right";
  handednessScore: number;
  /** Hand presence from the landmark model, in [0, 1]. */
  score: number;
  gesture: GestureName | null;
  /** The crop the landmarks came from (angle: the fingers' direction turned to up). */
  roi: Roi;
  /** The crop came from the previous frame's landmarks (no palm detection for this hand). */
  tracked: boolean;
  detection: PalmDetection | null;
}

export interface HandTrackerOptions {
  /** Folder with palm_detection_full.wrt and hand_landmark_full.wrt (the _lite ones with lite); default:
   * defaultModelBase(), the npm package's models/, which holds the lite models. */
  modelBase?: string | URL;
  palmModel?: string | URL | Uint8Array | ArrayBuffer;
  landmarkModel?: string | URL | Uint8Array | ArrayBuffer;
  /** MediaPipe's model_complexity 0: palm_detection_lite and hand_landmark_lite. Default: true without modelBase
   * (the models the package ships), false with one. */
  lite?: boolean;
  /** default 2 */
  maxHands?: number;
  minDetectionScore?: number;
  minPresence?: number;
  /** Follow hands from the previous frame's landmarks; the palm detector runs while fewer than maxHands are tracked. */
  tracking?: boolean;
  /** Where the crops, mask resize, smoothing and compositing run: "engine" (default: the wasm engine the models are
   * loaded in, JS where it cannot be reached from here, e.g. models of initWorker()) or "js". Same bytes either way. */
  imageOps?: "engine" | "js";
}

export interface HandStageMs { detector?: number; warp?: number; landmarks?: number; total: number }

export class HandTracker {
  static create(rt: ModelLoader, options?: HandTrackerOptions): Promise<HandTracker>;
  constructor(detector: RunnableModel, landmarker: RunnableModel, options?: HandTrackerOptions);
  tracked: Roi[];
  detect(image: Pixels): Promise<{ hands: Hand[]; ranDetector: boolean; ms: HandStageMs }>;
  detectPalms(image: Pixels, ms?: HandStageMs): Promise<PalmDetection[]>;
  landmarksIn(image: Pixels, roi: Roi, ms?: HandStageMs):
    Promise<{ landmarks: Float64Array; worldLandmarks: Float64Array; presence: number; left: number }>;
  reset(): void;
  release(): Promise<void>;
}

export type FingerName = "thumb" | "index" | "middle" | "ring" | "pinky";
/** Which fingers are extended, from world landmarks. */
export function fingerStates(world: ArrayLike<number>): Record<FingerName, boolean>;
export function direction(landmarks: ArrayLike<number>, a: number, b: number): "up" | "down" | null;
export function gesture(landmarks: ArrayLike<number>, world: ArrayLike<number>): GestureName | null;
export function roiFromHandLandmarks(landmarks: ArrayLike<number>): Roi;
export function associate(palmRois: Roi[], tracked: Roi[], threshold?: number): { roi: Roi; tracked: boolean; palm: number }[];
export function handedness(pLeft: number): ["Left" | "Right", number];
export function mapWorld(raw: ArrayLike<number>, roi: Roi): Float64Array;
export function palmAnchors(opts?: Record<string, unknown>): Float64Array;
export function palmLetterbox(pixels: Pixels): { data: Float32Array; shape: number[]; geometry: Record<string, number> };
export function decodePalms(raw: ArrayLike<number>, logits: ArrayLike<number>, geometry: Record<string, number>,
  minScore?: number): PalmDetection[];
export function palmsFrom(out: Record<string, { data: ArrayLike<number> }>, geometry: Record<string, number>,
  minScore?: number, maxPalms?: number): PalmDetection[];
export function roiFromPalm(det: PalmDetection): Roi;
export function transformRect(cx: number, cy: number, w: number, h: number, rotation: number,
  opts: { scale: number; shift_x: number; shift_y: number }): Roi;
export function normalizeRadians(a: number): number;

// -- selfie segmentation and compositing -------------------------------------------------------------------------

/** Person confidence in [0, 1], one value per frame pixel (row-major). */
export interface Mask { data: Float32Array; width: number; height: number }
/** A composited frame: the frame's byte type and channels. */
export interface Composited { data: Uint8Array | Uint8ClampedArray; width: number; height: number; channels: 3 | 4 }
export type SelfieModel = "general" | "landscape";

export interface SelfieSegmenterOptions {
  /** Folder with selfie_segmentation.wrt and selfie_segmentation_landscape.wrt; default: defaultModelBase(). */
  modelBase?: string | URL;
  generalModel?: string | URL | Uint8Array | ArrayBuffer;
  landscapeModel?: string | URL | Uint8Array | ArrayBuffer;
  /** "auto" (default): landscape when width > 4/3 height; a fixed model loads only that one. */
  model?: "auto" | SelfieModel;
  /** The previous mask's weight where the new one is uncertain (MediaPipe's 0.7); 0 turns smoothing off. */
  smoothing?: number;
  /** Where the crops, mask resize, smoothing and compositing run: "engine" (default: the wasm engine the models are
   * loaded in, JS where it cannot be reached from here, e.g. models of initWorker()) or "js". Same bytes either way. */
  imageOps?: "engine" | "js";
}

export class SelfieSegmenter {
  static create(rt: ModelLoader, options?: SelfieSegmenterOptions): Promise<SelfieSegmenter>;
  constructor(runners: Partial<Record<SelfieModel, RunnableModel>>, options?: SelfieSegmenterOptions);
  /** options.out: a Float32Array (width x height) that receives the mask, e.g. one reused frame after frame. */
  segment(image: Pixels, options?: { out?: Float32Array }
  ): Promise<{ mask: Mask; model: SelfieModel; ms: { model: number; post: number; total: number } }>;
  /** One frame segmented and composited over background (the bytes of segment() then replaceBackground()); with the
   * engine the mask stays in it unless options.mask asks for it (a Float32Array of the frame's size, or true). */
  replaceBackground(image: Pixels, background: Background, options?: SegmentCompositeOptions
  ): Promise<SegmentComposited>;
  /** One frame segmented and its background box-blurred (segment() then blurBackground()). */
  blurBackground(image: Pixels, options?: { radius?: number } & SegmentCompositeOptions): Promise<SegmentComposited>;
  rawMask(image: Pixels): Promise<Mask & { model: SelfieModel }>;
  reset(): void;
  release(): Promise<void>;
}

export interface SegmentCompositeOptions extends CompositeOptions { mask?: Float32Array | boolean }
export interface SegmentComposited {
  image: Composited;
  /** null unless options.mask asked for it */
  mask: Mask | null;
  model: SelfieModel;
  ms: { model: number; post: number; total: number };
}

type Background = Pixels | [number, number, number] | string;
/** out: write the result into these bytes (the frame's size and channels; the frame's own data composites in place)
 * instead of a new array, e.g. one buffer reused frame after frame. */
export interface CompositeOptions { out?: Uint8Array | Uint8ClampedArray }
/** The frame where the mask says person, the background (image of the frame's size, [r, g, b] or "#rrggbb") elsewhere. */
export function replaceBackground(frame: Pixels, mask: Mask | Float32Array, background: Background,
  options?: CompositeOptions): Composited;
/** The background box-blurred (2 passes of radius, default 8), the person kept. */
export function blurBackground(frame: Pixels, mask: Mask | Float32Array,
  options?: { radius?: number } & CompositeOptions): Composited;
export function composite(frame: Pixels, mask: Mask | Float32Array, background: Pixels, options?: CompositeOptions
): Composited;
export function boxBlur(frame: Pixels, radius?: number, passes?: number): Composited;
/** Canvas helper: composites and draws the result at (0, 0) with putImageData. */
export function drawSegmented(ctx: CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D, frame: Pixels,
  mask: Mask | Float32Array, options?: { background?: Background; blur?: boolean; radius?: number }): Composited;
export function chooseModel(width: number, height: number): SelfieModel;
export function selfieInput(pixels: Pixels, model: SelfieModel): Float32Array;
export function resizeMask(mask: ArrayLike<number>, w: number, h: number, width: number, height: number): Float32Array;
export function smooth(mask: ArrayLike<number>, previous: ArrayLike<number> | null, ratio?: number): Float32Array;
export function alpha8(m: number): number;
