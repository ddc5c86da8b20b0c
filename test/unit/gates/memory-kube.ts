// Moved to test/unit/kube/memory-kube.ts (a double of the kube layer); this re-export keeps older imports working.
export * from '../kube/memory-kube.ts';
