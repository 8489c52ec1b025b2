"""``make soak``: the real operator under a realistic workload and injected faults, for a
configurable time, then the database compared with the ground truth the soak kept.

``bodies`` builds the objects as the Kubeflow controllers, mpi-operator and the kubelet
write them; ``truth`` makes every change through the emulated API and remembers each
object's states; ``workload`` plays the jobs' lives and the unrelated noise;
``timeline`` records when the operator could not see; ``faults`` plans and injects the
faults; ``operators`` starts, kills and restarts the operator process; ``checker``
compares the tables with the truth; ``run`` ties them together; ``__main__`` is the
command line.
"""
